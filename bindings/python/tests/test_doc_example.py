# SPDX-License-Identifier: Apache-2.0
"""docs/python.md's example runs as written: its passphrase on standard input (getpass's fallback)."""
import os
import re
import subprocess
import sys

from conftest import PACKAGE, REPOSITORY


def test_the_documented_example_enrolls_and_reopens(tmp_path):
    page = (REPOSITORY / "docs" / "python.md").read_text()
    example = re.search(r"## An example\n\n```python\n(.*?)```", page, re.S).group(1)
    (tmp_path / "example.py").write_text(example)
    home = tmp_path / "home"
    environment = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / "data"),
                       XDG_STATE_HOME=str(home / "state"), PYTHONPATH=str(PACKAGE))
    # start_new_session: no controlling terminal, so getpass reads the answers from stdin.
    ran = subprocess.run([sys.executable, str(tmp_path / "example.py")], input="example pass\nexample pass\n",
                         env=environment, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         start_new_session=True)
    assert ran.returncode == 0, ran.stderr
    check = ("import keybay\n"
             "assert keybay.status('com.example.notes')['state'] == 'protected'\n"
             "class A:\n ask_secret = lambda self, prompt, confirming: 'example pass'\n"
             "with keybay.open('com.example.notes', interaction=A()) as store:\n"
             " assert store['api/token'] == b's3cr3t'\n")
    checked = subprocess.run([sys.executable, "-c", check], env=environment, cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stderr
