# SPDX-License-Identifier: Apache-2.0
import ctypes

import pytest

import keybay
from conftest import FAST


def test_set_get_keys_delete(app_id, home):
    with keybay.open(app_id) as store:
        store.set("api/token", "s3cr3t")
        store.set("blob", b"\x00\xff\x00")
        store.set("empty", b"")
        assert store.get("api/token") == b"s3cr3t"
        assert store.get("blob") == b"\x00\xff\x00"
        assert store.get("empty") == b""
        assert store.get("missing") is None
        with pytest.raises(TypeError):
            store.set("number", 5)
        assert store.get("number") is None
        assert store.keys() == ["api/token", "blob", "empty"]
        store.delete("blob")
        assert store.keys() == ["api/token", "empty"]
        with pytest.raises(keybay.NotFound) as deleted:
            store.delete("blob")
        assert deleted.value.code == "not-found" and deleted.value.number == 31
    # The store is in the temporary home, and what was written is there on reopening.
    assert (home / "data" / "keybay" / app_id).is_dir()
    with keybay.open(app_id) as store:
        assert store["api/token"] == b"s3cr3t"


def test_missing_key_is_key_error(app_id):
    with keybay.open(app_id) as store:
        with pytest.raises(KeyError):
            store["nothing/here"]


def test_invalid_key_is_invalid_key(app_id):
    with keybay.open(app_id) as store:
        with pytest.raises(keybay.InvalidKey) as raised:
            store.set("two words", "x")
    assert raised.value.code == "invalid-key" and raised.value.number == 2
    assert isinstance(raised.value, keybay.Error)


def test_closed_store_raises_closed(app_id):
    store = keybay.open(app_id)
    store.close()
    with pytest.raises(keybay.Closed):
        store.get("a")


def test_every_code_has_its_class():
    lib = ctypes.CDLL(__import__("os").environ["KEYBAY_LIBRARY"])
    lib.keybay_code_name.restype = ctypes.c_char_p
    for number in range(1, 32):
        name = lib.keybay_code_name(number).decode()
        cls = getattr(keybay, "".join(p.capitalize() for p in name.split("-")))
        assert issubclass(cls, keybay.Error) and cls.number == number and cls.code == name
        assert keybay.CODE_NAMES[number - 1] == name
    assert lib.keybay_code_name(32) is None
    assert keybay.StoreNotFound is not keybay.NotFound


def test_status_and_reset(app_id):
    assert keybay.status(app_id)["state"] == "absent"
    with keybay.open(app_id) as store:
        store.set("k", "v")
    assert keybay.status(app_id)["state"] == "platform-only"
    keybay.reset(app_id)
    assert keybay.status(app_id)["state"] == "absent"
    keybay.reset(app_id)  # idempotent


def test_one_store_shared_by_threads(app_id):
    import threading

    with keybay.open(app_id) as store:
        def write(thread):
            for i in range(10):
                store.set(f"t{thread}/k{i}", f"{thread}:{i}")

        threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(store.keys()) == 40
        assert all(store[f"t{t}/k{i}"] == f"{t}:{i}".encode() for t in range(4) for i in range(10))


def test_plugin_dirs_are_taken_as_paths(app_id):
    import os
    build = os.path.dirname(os.environ["KEYBAY_LIBRARY"])
    with keybay.open(app_id, plugin_dirs=[build]) as store:
        store.set("k", "v")
    assert keybay.status(app_id, plugin_dirs=[build])["state"] == "platform-only"
    with pytest.raises(TypeError):
        keybay.open(app_id, plugin_dirs=[5])


class _Watched:
    """The library with every function call recorded (calls go through; a test may forbid some)."""

    def __init__(self, lib):
        self._lib, self.called = lib, []

    def __getattr__(self, name):
        function = getattr(self._lib, name)
        if not name.startswith("keybay_") or name in ("keybay_error_free", "keybay_free_string"):
            return function

        def call(*arguments):
            self.called.append(name)
            return function(*arguments)
        return call


def test_a_nul_is_refused_before_the_library_is_called(app_id, monkeypatch):
    from keybay import _library
    with keybay.open(app_id) as store:
        store.set("tokens/alice", "alice's")
        watched = _Watched(_library.lib)
        monkeypatch.setattr(_library, "lib", watched)
        # Each entry point that takes a string, with a NUL where C would end the string.
        refused = [
            lambda: store.set("tokens/alice\0mallory", "mallory's"),
            lambda: store.get("tokens/alice\0x"),
            lambda: store["tokens/alice\0x"],
            lambda: store.delete("tokens/alice\0x"),
            lambda: store.enroll("passphrase\0x", **FAST),
            lambda: store.enroll("passphrase", "main\0x", **FAST),
            lambda: store.enroll("passphrase", **{"memory_kib\0x": 8192}),
            lambda: store.enroll("passphrase", memory_kib="8192\0x"),
            lambda: store.remove_method("0" * 32 + "\0x"),
            lambda: keybay.open(app_id + "\0.other"),
            lambda: keybay.open(app_id, root="file-root\0x"),
            lambda: keybay.open(app_id, method="0" * 32 + "\0x"),
            lambda: keybay.open(app_id, plugin_dirs=["/tmp\0/x"]),
            lambda: keybay.open(app_id, plugin_dirs=[b"/tmp\0/x"]),
            lambda: keybay.status(app_id + "\0.other"),
            lambda: keybay.status(app_id, root="file-root\0x"),
            lambda: keybay.reset(app_id + "\0.other"),
            lambda: keybay.reset(app_id, root="file-root\0x"),
        ]
        for number, attempt in enumerate(refused):
            with pytest.raises(ValueError, match="NUL"):
                attempt()
            assert watched.called == [], f"attempt {number} reached the library: {watched.called}"
        monkeypatch.undo()
        assert store.keys() == ["tokens/alice"]
        assert store["tokens/alice"] == b"alice's"
    assert keybay.status(app_id)["state"] == "platform-only"
