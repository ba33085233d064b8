# SPDX-License-Identifier: Apache-2.0
"""keybay.keyring_backend.import_from_secret_service: items made by keyring's own SecretService
backend on a private gnome-keyring (dbus-run-session, never the user's bus) become KeybayKeyring
passwords; conflicts are kept unless replace."""
import json
import os
import subprocess
import sys

from conftest import PACKAGE

SCRIPT = """
import json
from keyring.backends import SecretService
from keybay.keyring_backend import KeybayKeyring, import_from_secret_service
ss = SecretService.Keyring()
ss.set_password("svc", "alice", "from-the-keyring")
ss.set_password("svc", "bob", "b0b")
ss.set_password("other", "carol", "c")
ours = KeybayKeyring()
ours.set_password("svc", "bob", "already-in-keybay")
first = import_from_secret_service("svc")
second = import_from_secret_service("svc", replace=True)
everything = import_from_secret_service()
print(json.dumps([first, second, everything, ours.get_password("svc", "alice"), ours.get_password("svc", "bob"),
                  ours.get_password("other", "carol")]))
"""


def test_keyring_items_become_keybay_passwords(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k not in ("DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "PYTHON_KEYRING_BACKEND")}
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    environment.update(HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"),
                       XDG_RUNTIME_DIR=str(runtime), PYTHONPATH=str(PACKAGE))
    ran = subprocess.run(["dbus-run-session", "--", "sh", "-c",
                          'printf test | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$0" -c "$1"',
                          sys.executable, SCRIPT], env=environment, capture_output=True, text=True, timeout=120, start_new_session=True)
    assert ran.returncode == 0, ran.stderr
    first, second, everything, alice, bob, carol = json.loads(ran.stdout.strip().splitlines()[-1])
    assert first == {"imported": [["svc", "alice"]], "unchanged": [], "replaced": [], "conflicts": [["svc", "bob"]]}
    assert second == {"imported": [], "unchanged": [["svc", "alice"]], "replaced": [["svc", "bob"]], "conflicts": []}
    assert everything["imported"] == [["other", "carol"]]
    assert (alice, bob, carol) == ("from-the-keyring", "b0b", "c")
