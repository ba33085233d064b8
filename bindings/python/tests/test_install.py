# SPDX-License-Identifier: Apache-2.0
"""`pip install ./bindings/python` into a fresh venv, run against a `make install` prefix."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import PACKAGE, REPOSITORY

SEQUENCE = r"""
import keybay, sys
class Asker:
    def __init__(self): self.asked = 0
    def ask_secret(self, prompt, is_confirmation): self.asked += 1; return "installed passphrase"
assert keybay.__file__.startswith(sys.prefix), keybay.__file__  # the installed copy, not the source tree
asker = Asker()
with keybay.open("org.keybay.pytest.installed") as store:
    store.set("api/token", "s3cr3t")
    method = store.enroll("passphrase", interaction=asker, memory_kib=8192, iterations=1, lanes=1)
with keybay.open("org.keybay.pytest.installed", method=method, interaction=asker) as store:
    assert store["api/token"] == b"s3cr3t" and asker.asked == 3
try:
    keybay.open("org.keybay.pytest.installed", method=method)
    raise SystemExit("opened without an interaction")
except keybay.InteractionRequired as error:
    assert error.code == "interaction-required"
keybay.reset("org.keybay.pytest.installed")
print("installed-ok", keybay.library_version())
"""


def run(arguments, environment, cwd):
    result = subprocess.run(arguments, env=environment, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{arguments}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    top = tmp_path_factory.mktemp("install")
    build = pathlib.Path(os.environ["KEYBAY_LIBRARY"]).parent
    prefix, venv = top / "prefix", top / "venv"
    run(["make", "-s", "install", f"BIN={build}", f"PREFIX={prefix}"], dict(os.environ), REPOSITORY)
    run([sys.executable, "-m", "venv", str(venv)], dict(os.environ), top)
    # A copy of bindings/python, so setuptools' build/ and egg-info never land in the checkout.
    source = top / "python"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
    run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(source)], dict(os.environ), top)
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("KEYBAY_LIBRARY", "KEYBAY_PLUGIN_PATH", "PYTHONPATH", "LD_LIBRARY_PATH")}
    home = top / "home"
    environment.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"))
    return prefix, venv, environment, top


def test_the_installed_package_runs_on_the_installed_library(installed):
    prefix, venv, environment, top = installed
    environment = dict(environment, KEYBAY_LIBRARY=str(prefix / "lib" / "libkeybay.so.1"))
    out = run([str(venv / "bin" / "python"), "-c", SEQUENCE], environment, top)
    assert out.startswith("installed-ok ")


def test_the_soname_is_found_without_keybay_library(installed):
    prefix, venv, environment, top = installed
    environment = dict(environment, LD_LIBRARY_PATH=str(prefix / "lib"))
    out = run([str(venv / "bin" / "python"), "-c", "import keybay; print(keybay._lib._name)"], environment, top)
    assert out.strip() == "libkeybay.so.1"


def test_a_missing_keybay_library_fails_closed(installed):
    prefix, venv, environment, top = installed
    # The soname is loadable here, but the named file is insisted on.
    environment = dict(environment, LD_LIBRARY_PATH=str(prefix / "lib"), KEYBAY_LIBRARY=str(top / "no-such.so"))
    probe = "try:\n import keybay\nexcept ImportError:\n raise SystemExit(7)"
    result = subprocess.run([str(venv / "bin" / "python"), "-c", probe], env=environment, cwd=top,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 7, result.stderr
