# SPDX-License-Identifier: Apache-2.0
"""The library's open policy and the 1.2 calls from Python: a store with two methods opens by the
host's choice, the ask request names the method; status, contains, get_many, clear_all, verify,
tries, unlock and lock."""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

import pytest

import keybay
from conftest import FAST, PACKAGE


class Host:
    """An interaction with ask(request): it answers each ask with the next of `answers` (the
    last repeats). It cannot choose a method."""

    def __init__(self, answers, plugin=None):
        self.answers = list(answers)
        self.plugin = plugin
        self.requests = []
        self.offered = None
        self.shown = []

    def ask(self, request):
        self.requests.append(request)
        return self.answers[min(len(self.requests), len(self.answers)) - 1]

    def show_secret(self, label, secret):
        self.shown.append(secret)


class Chooser(Host):
    """A Host that chooses the method of `plugin`."""

    def choose(self, methods):
        self.offered = methods
        return next(m for m in methods if m.plugin == self.plugin)


def two_methods(app_id):
    """A store with records a and b, a passphrase ("pw", label Passphrase) and a recovery key
    (label Paper key); returns the ids and the key."""
    enrolling = Host(["pw"])
    with keybay.open(app_id) as store:
        store.set("a", "1")
        store.set("b", "2")
        passphrase = store.enroll("passphrase", "Passphrase", interaction=enrolling, **FAST)
    with keybay.open(app_id, method=passphrase, interaction=enrolling) as store:
        recovery = store.enroll("recovery", "Paper key", interaction=enrolling)
    assert [r.kind for r in enrolling.requests[:2]] == ["new", "confirm"]
    return passphrase, recovery, enrolling.shown[0]


def test_status_lists_methods_as_objects(app_id):
    passphrase, recovery, _ = two_methods(app_id)
    status = keybay.status(app_id)
    assert status.state == "protected" and status["state"] == "protected"
    assert status.methods == [keybay.Method(passphrase, "passphrase", "Passphrase", False),
                              keybay.Method(recovery, "recovery", "Paper key", False)]
    assert status.unlocked is False and status.unlocked_until is None and status.root == "file-root"


def test_no_method_and_no_chooser_is_authentication_required_listing_both(app_id):
    passphrase, recovery, _ = two_methods(app_id)
    asker = Host(["pw"])
    with pytest.raises(keybay.AuthenticationRequired) as raised:
        keybay.open(app_id, interaction=asker)
    assert [m.id for m in raised.value.methods] == [passphrase, recovery]
    assert raised.value.methods[1].label == "Paper key" and asker.requests == []


def test_the_hosts_choice_opens_and_the_request_names_the_method(app_id):
    passphrase, recovery, key = two_methods(app_id)
    host = Chooser([key], plugin="recovery")
    with keybay.open(app_id, interaction=host) as store:
        assert store.get("a") == b"1"
    assert [m.label for m in host.offered] == ["Passphrase", "Paper key"]
    (request,) = host.requests
    assert (request.kind, request.method_id, request.label, request.plugin_id, request.app_id, request.secret_kind,
            request.is_retry) == ("secret", recovery, "Paper key", "recovery", app_id, "recovery key", False)


def test_a_chooser_answering_an_unknown_method_fails(app_id):
    two_methods(app_id)

    class Wrong(Chooser):
        def choose(self, methods):
            return "0" * 32

    with pytest.raises(keybay.InteractionRequired) as raised:
        keybay.open(app_id, interaction=Wrong(["pw"]))
    assert isinstance(raised.value.__cause__, ValueError)


def test_records_contains_get_many_clear_all(app_id):
    passphrase, _, _ = two_methods(app_id)
    with keybay.open(app_id, method=passphrase, interaction=Host(["pw"])) as store:
        assert store.contains("a") and "b" in store and not store.contains("c")
        assert store.get_many(["a", "c", "b"]) == {"a": b"1", "b": b"2"}
        assert store.get_many([]) == {}
        with pytest.raises(ValueError):
            store.get_many(["a\0b"])
        store.clear_all()
        assert store.keys() == [] and store.get_many(["a"]) == {}
    assert keybay.status(app_id).state == "protected"


def test_verify_and_tries(app_id):
    passphrase, _, _ = two_methods(app_id)
    with keybay.open(app_id, method=passphrase, interaction=Host(["pw"])) as store:
        store.verify(passphrase, interaction=Host(["pw"]))
        with pytest.raises(keybay.WrongSecret):
            store.verify(passphrase, interaction=Host(["nope"]))
    again = Host(["nope", "pw"])
    with keybay.open(app_id, method=passphrase, interaction=again, tries=3) as store:
        assert store.get("a") == b"1"
    assert [(r.is_retry, r.tries_left) for r in again.requests] == [(False, None), (True, 2)]
    once = Host(["nope", "pw"])
    with pytest.raises(keybay.WrongSecret):
        keybay.open(app_id, method=passphrase, interaction=once)
    assert len(once.requests) == 1
    with pytest.raises(ValueError):
        keybay.open(app_id, method=passphrase, interaction=once, tries=11)


def _agent_pid(path):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        return struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]


def test_unlock_lets_another_process_read_and_lock_ends_it(app_id, monkeypatch):
    passphrase, _, _ = two_methods(app_id)
    runtime = tempfile.mkdtemp(prefix="keybay-run-")
    os.chmod(runtime, 0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
    socket_path = os.path.join(runtime, "keybay", "agent.socket")
    reader = [sys.executable, "-c", "import sys, keybay; s = keybay.open(sys.argv[1]); print(s.get('b').decode())", app_id]
    environment = dict(os.environ, PYTHONPATH=str(PACKAGE))
    try:
        with keybay.open(app_id, method=passphrase, interaction=Host(["pw"])) as store:
            until = store.unlock(60)
        assert until and until > time.time() + 50
        read = subprocess.run(reader, env=environment, capture_output=True, text=True, timeout=60)
        assert read.returncode == 0 and read.stdout == "2\n", read.stderr
        assert keybay.status(app_id).unlocked is True
        assert keybay.lock(app_id) is True and keybay.lock(app_id) is False
        read = subprocess.run(reader, env=environment, capture_output=True, text=True, timeout=60)
        assert read.returncode == 1 and "AuthenticationRequired" in read.stderr
    finally:
        try:
            os.kill(_agent_pid(socket_path), 15)
        except OSError:
            pass
