# SPDX-License-Identifier: Apache-2.0
"""keybay.keyring_backend.KeybayKeyring: keyring's own backend tests (BackendBasicTests, from the
keyring package), the `keyring` CLI as a process, the backend keyring picks with and without a
Secret Service, a locked store and the documented records. Every test has its own XDG data and
state directories; a Secret Service, where one is used, is a private gnome-keyring on a private bus."""
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import unicodedata

import pytest
from keyring import errors as keyring_errors
from keyring.testing.backend import BackendBasicTests

import keybay
from conftest import FAST, PACKAGE, Asker
from keybay.keyring_backend import KeybayKeyring

BACKEND = "keybay.keyring_backend.KeybayKeyring"


@pytest.fixture
def private_home(tmp_path, monkeypatch):
    """XDG data and state directories of this test alone."""
    for variable, sub in [("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state")]:
        monkeypatch.setenv(variable, str(tmp_path / sub))
    return tmp_path


class TestKeybayKeyring(BackendBasicTests):
    # Named to sort before BackendBasicTests' own autouse fixture, _init_properties, which calls
    # init_keyring; init_keyring checks that it did.
    @pytest.fixture(autouse=True)
    def _a_private_home(self, private_home):
        self.data_home = str(private_home / "data")

    def init_keyring(self):
        assert os.environ["XDG_DATA_HOME"] == self.data_home, "the private home must be in place first"
        return KeybayKeyring()

    def test_the_store_is_the_tests_own(self):
        self.set_password("service", "user", "password")
        assert os.path.isdir(os.path.join(self.data_home, "keybay", "python-keyring"))


def keyring_cli(arguments, home, stdin="", extra=None):
    environment = {k: v for k, v in os.environ.items() if k not in ("DBUS_SESSION_BUS_ADDRESS", "DISPLAY")}
    environment.update(PYTHON_KEYRING_BACKEND=BACKEND, PYTHONPATH=str(PACKAGE), HOME=str(home),
                       XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"), **(extra or {}))
    return subprocess.run([sys.executable, "-m", "keyring", *arguments], input=stdin, env=environment, cwd=home,
                          capture_output=True, text=True, timeout=120, start_new_session=True)


def test_the_keyring_cli_round_trips(private_home):
    home = private_home
    stored = keyring_cli(["set", "svc.example", "alice"], home, stdin="p\u00e4ssword 1\n")
    assert stored.returncode == 0, stored.stderr
    got = keyring_cli(["get", "svc.example", "alice"], home)
    assert (got.returncode, got.stdout) == (0, "p\u00e4ssword 1\n"), got.stderr
    assert len(keybay.open("python-keyring").keys()) == 1
    deleted = keyring_cli(["del", "svc.example", "alice"], home)
    assert deleted.returncode == 0, deleted.stderr
    gone = keyring_cli(["get", "svc.example", "alice"], home)
    assert (gone.returncode, gone.stdout) == (1, "")
    assert keybay.open("python-keyring").keys() == []


def test_get_credential_without_a_username_finds_the_services_user(private_home):
    backend = KeybayKeyring()
    backend.set_password("svc.a", "alice", "pa")
    backend.set_password("svc.b", "bob", "pb")
    found = backend.get_credential("svc.b", None)
    assert (found.username, found.password) == ("bob", "pb")
    backend.delete_password("svc.b", "bob")
    assert backend.get_credential("svc.b", None) is None
    assert backend.get_credential("svc.a", None).username == "alice"


CANCELLING_PINENTRY = """#!/bin/sh
echo "OK Pleased to meet you"
while read -r line; do
  case "$line" in
    GETPIN*) echo "ERR 83886179 Operation cancelled <Pinentry>" ;;
    BYE*) echo "OK closing connection"; exit 0 ;;
    *) echo OK ;;
  esac
done
"""


def test_a_locked_store_raises_keyring_locked(private_home, monkeypatch):
    # The backend asks through the library's asker: here a pinentry that cancels (KEYBAY_PINENTRY
    # is used even where this process has a terminal, so nothing is asked on it).
    pinentry = private_home / "pinentry"
    pinentry.write_text(CANCELLING_PINENTRY)
    pinentry.chmod(0o755)
    monkeypatch.setenv("KEYBAY_PINENTRY", str(pinentry))
    backend = KeybayKeyring()
    backend.set_password("svc", "user", "locked-password")
    asker = Asker("a passphrase for the test")
    with keybay.open("python-keyring") as store:
        store.enroll("passphrase", interaction=asker, **FAST)
    for call in [lambda: backend.get_password("svc", "user"), lambda: backend.set_password("svc", "user", "new-password"),
                 lambda: backend.delete_password("svc", "user"), lambda: backend.get_credential("svc", None)]:
        with pytest.raises(keyring_errors.KeyringLocked) as locked:
            call()
        message = str(locked.value)
        assert "keybay-methods --app python-keyring unlock" in message
        assert "locked-password" not in message and "new-password" not in message


def test_no_store_is_made_by_a_read(private_home):
    backend = KeybayKeyring()
    assert backend.get_password("svc", "user") is None and backend.get_credential("svc", None) is None
    with pytest.raises(keyring_errors.PasswordDeleteError):
        backend.delete_password("svc", "user")
    assert keybay.status("python-keyring")["state"] == "absent"
    # With a store, a missing password is still PasswordDeleteError.
    backend.set_password("svc", "other", "pw")
    with pytest.raises(keyring_errors.PasswordDeleteError):
        backend.delete_password("svc", "user")
    assert backend.get_password("svc", "other") == "pw"


def test_the_app_id_property_chooses_the_store(private_home, monkeypatch):
    monkeypatch.setenv("KEYRING_PROPERTY_APP_ID", "org.example.tools")
    backend = KeybayKeyring()
    assert backend.app_id == "org.example.tools"
    backend.set_password("svc", "user", "pw")
    assert keybay.status("python-keyring")["state"] == "absent"
    assert len(keybay.open("org.example.tools").keys()) == 1


def test_records_are_as_documented(private_home):
    """Key and value as docs/integrations.md defines them, computed here from the text."""
    KeybayKeyring().set_password("svc", "ü", "pw")

    def digest(role, fields, size):
        h = hashlib.blake2b(digest_size=size)
        h.update(b"keybay:integration-record:v1\x00" + bytes([3, role]))
        for tag, value in fields:
            h.update(bytes([tag]) + struct.pack(">I", len(value)) + value)
        return h.hexdigest()

    key = f"keyring/{digest(1, [(1, b'svc')], 16)}/{digest(2, [(1, b'svc'), (2, 'ü'.encode())], 32)}"
    with keybay.open("python-keyring") as store:
        assert store.keys() == [key]
        assert store.get(key) == b"KBIR\x01\x03" + b"\x01\x00\x00\x00\x03svc" + b"\x02\x00\x00\x00\x02\xc3\xbc" + b"\x03\x00\x00\x00\x02pw"


NFC_E, NFD_E = unicodedata.normalize("NFC", "\u00e9"), unicodedata.normalize("NFD", "\u00e9")


@pytest.mark.parametrize("first, second", [
    (("svc", "Alice"), ("svc", "alice")),
    (("Svc", "alice"), ("svc", "alice")),
    (("svc", "jos" + NFC_E), ("svc", "jos" + NFD_E)),
    (("caf" + NFC_E, "bob"), ("caf" + NFD_E, "bob")),
    (("a/b", "c"), ("a", "b/c")),
    (("a\x00b", "c"), ("a", "b\x00c")),
    (("", "x"), ("x", "")),
], ids=["username-case", "service-case", "username-nfc-nfd", "service-nfc-nfd", "slash", "nul", "empty-service-or-username"])
def test_pairs_that_differ_only_in_one_detail_are_two_records(private_home, first, second):
    """The (service, username) to record mapping is injective: two pairs that differ only in
    case, in Unicode normalisation, in which side of a separator ("/", as the record key has it,
    or NUL) a part is on, or in which of the two is empty, keep two passwords."""
    assert unicodedata.normalize("NFC", NFD_E) == NFC_E and NFD_E != NFC_E
    backend = KeybayKeyring()
    backend.set_password(*first, "first password")
    backend.set_password(*second, "second password")
    assert backend.get_password(*first) == "first password"
    assert backend.get_password(*second) == "second password"
    assert backend.get_credential(*first).password == "first password"
    assert backend.get_credential(*second).password == "second password"
    with keybay.open("python-keyring") as store:
        assert len(store.keys()) == 2


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """The package pip-installed (its entry point with it) into a venv that sees this Python's keyring."""
    top = tmp_path_factory.mktemp("keyring-venv")
    venv = top / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    source = top / "python"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
    # The build records a prefix's library (docs/python.md); this build's, which KEYBAY_LIBRARY names anyway.
    (top / "prefix" / "lib").mkdir(parents=True)
    (top / "prefix" / "lib" / "libkeybay.so.1").symlink_to(os.environ["KEYBAY_LIBRARY"])
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-index", "--disable-pip-version-check",
                                str(source)], env=dict(os.environ, KEYBAY_PREFIX=str(top / "prefix")),
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    return venv


PICKED = "import keyring; k = keyring.get_keyring(); print(type(k).__module__ + '.' + type(k).__name__)"


def isolated(home):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "PYTHONPATH", "PYTHON_KEYRING_BACKEND")}
    runtime = home / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    environment.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_STATE_HOME=str(home / "state"),
                       XDG_CONFIG_HOME=str(home / "config"), XDG_RUNTIME_DIR=str(runtime))
    return environment


def test_without_a_secret_service_keyring_picks_keybay(venv, private_home):
    environment = isolated(private_home)
    picked = subprocess.run([str(venv / "bin" / "python"), "-c", PICKED], env=environment, capture_output=True, text=True,
                            timeout=120, start_new_session=True)
    assert picked.returncode == 0, picked.stderr
    assert picked.stdout.strip() == BACKEND
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "keyring", "--list-backends"], env=environment,
                            capture_output=True, text=True, timeout=120, start_new_session=True)
    assert f"{BACKEND} (priority: 1)" in listed.stdout, listed.stdout
    stored = subprocess.run([str(venv / "bin" / "python"), "-m", "keyring", "set", "svc", "user"], input="pw\n", env=environment,
                            capture_output=True, text=True, timeout=120, start_new_session=True)
    assert stored.returncode == 0, stored.stderr
    assert len(keybay.open("python-keyring").keys()) == 1


def test_a_secret_service_that_answers_comes_first(venv, private_home):
    environment = isolated(private_home)
    script = ("import keyring; from keyring.backends import SecretService, chainer; from keybay.keyring_backend import KeybayKeyring; "
              "k = keyring.get_keyring(); first = chainer.ChainerBackend.backends[0]; "
              "print(type(first).__module__, SecretService.Keyring.priority > KeybayKeyring.priority > 0); "
              "keyring.set_password('svc', 'user', 'in-the-keyring'); print(SecretService.Keyring().get_password('svc', 'user'))")
    ran = subprocess.run(["dbus-run-session", "--", "sh", "-c",
                          'printf test | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$0" -c "$1"',
                          str(venv / "bin" / "python"), script],
                         env=environment, capture_output=True, text=True, timeout=120, start_new_session=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split("\n")[:2] == ["keyring.backends.SecretService True", "in-the-keyring"], ran.stdout
    assert keybay.status("python-keyring")["state"] == "absent"  # the password went to the Secret Service
