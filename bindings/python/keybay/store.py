# SPDX-License-Identifier: Apache-2.0
"""keybay.open, Store, keybay.status and keybay.reset over the C API."""
import ctypes
import json
import os

from . import _library as c
from . import errors
from .interaction import Bridge
from .methods import Status

KEYBAY_ERR_NOT_FOUND = 31
KEYBAY_ERR_CLOSED = 30
KEYBAY_EXPORT_ALLOW_AGENT = 1
KEYBAY_IMPORT_REPLACE = 1
KEYBAY_IMPORT_DRY_RUN = 2


def _utf8(value, what):
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return _c_string(value.encode("utf-8"), what)


def _c_string(data, what):
    # The library reads a C string: it would end at a NUL and act on what precedes it (another
    # key, another application's store). Refused here, before the library is called.
    if b"\0" in data:
        raise ValueError(f"{what} contains a NUL character, which no C string can carry")
    return data


def _options(app_id, root=None, method=None, no_input=False, plugin_dirs=None, tries=1):
    options = c.OpenOptions()
    options.struct_size = ctypes.sizeof(c.OpenOptions)
    options.app_id = _utf8(app_id, "app_id")
    options.root = None if root is None else _utf8(root, "root")
    options.method_id = None if method is None else _utf8(method, "method")
    options.no_input = 1 if no_input else 0
    if not isinstance(tries, int) or isinstance(tries, bool) or not 1 <= tries <= 10:
        raise ValueError(f"tries must be an int from 1 to 10, not {tries!r}")
    options.tries = tries
    if plugin_dirs:
        directories = (ctypes.c_char_p * (len(plugin_dirs) + 1))(*[_c_string(os.fsencode(d), "plugin_dirs entry")
                                                               for d in plugin_dirs], None)
        options.plugin_dirs = ctypes.cast(directories, ctypes.POINTER(ctypes.c_char_p))
        options._directories = directories  # alive as long as the options
    return options


def _raise(number, slot, bridge=None):
    error = errors.take(slot, number)
    if bridge is not None and bridge.failure is not None:
        raise error from bridge.failure
    raise error


def _option_strings(options):
    # memory_kib=8192 -> "memory-kib=8192"; True/False -> "true"/"false".
    strings = []
    for name, value in options.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        name = _c_string(name.replace("_", "-").encode("utf-8"), "option name")
        strings.append(name + b"=" + _c_string(str(value).encode("utf-8"), f"option {name.decode()}'s value"))
    return (ctypes.c_char_p * (len(strings) + 1))(*strings, None)


def _taken_bytes(pointer, length):
    """The bytes the library handed out (as bytes), its memory wiped and freed."""
    try:
        return ctypes.string_at(pointer, length.value)
    finally:
        c.lib.keybay_free_value(pointer, length.value)


class Store:
    """An open session on one application's store (keybay_store *). Close it, or use `with`."""

    def __init__(self, handle, interaction, bridge=None):
        self._handle = handle
        self._interaction = interaction
        # The library keeps open's keybay_interaction (its callbacks and their struct) until
        # keybay_close and may call it on any later call (keybay.h): it lives as long as the handle.
        self._bridge = bridge

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.close()
        return False

    def __del__(self):
        self.close()

    def close(self):
        """Ends the session. Must not race other calls on this Store (keybay.h)."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            c.lib.keybay_close(handle)
        self._bridge = None  # only once the library has let go of it

    def _open_handle(self):
        if not self._handle:
            raise errors.make(KEYBAY_ERR_CLOSED, "the store is closed")
        return self._handle

    def get(self, key):
        """The value of `key` as bytes, or None when there is no record."""
        value, length, slot = ctypes.c_void_p(), ctypes.c_size_t(), errors.error_slot()
        number = c.lib.keybay_get(self._open_handle(), _utf8(key, "key"), ctypes.byref(value), ctypes.byref(length), ctypes.byref(slot))
        if number == KEYBAY_ERR_NOT_FOUND:
            errors.take(slot, number)  # freed, not raised
            return None
        if number != 0:
            _raise(number, slot)
        return _taken_bytes(value, length)

    def __getitem__(self, key):
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def set(self, key, value):
        """Stores `value` (bytes-like, or str as UTF-8) under `key`, durably, before it returns."""
        # memoryview refuses what is not bytes-like (bytearray(5) would be five zero bytes).
        data = bytearray(value.encode("utf-8") if isinstance(value, str) else memoryview(value))
        try:
            buffer = (ctypes.c_char * len(data)).from_buffer(data) if data else None
            slot = errors.error_slot()
            number = c.lib.keybay_set(self._open_handle(), _utf8(key, "key"), buffer, len(data), ctypes.byref(slot))
            del buffer
            if number != 0:
                _raise(number, slot)
        finally:
            ctypes.memset((ctypes.c_char * len(data)).from_buffer(data), 0, len(data))

    def delete(self, key):
        """Removes `key`; keybay.NotFound when there was no record."""
        slot = errors.error_slot()
        number = c.lib.keybay_delete(self._open_handle(), _utf8(key, "key"), ctypes.byref(slot))
        if number != 0:
            _raise(number, slot)

    def __contains__(self, key):
        return self.contains(key)

    def contains(self, key):
        """Whether `key` has a record (reads no value)."""
        found, slot = ctypes.c_int(), errors.error_slot()
        number = c.lib.keybay_contains(self._open_handle(), _utf8(key, "key"), ctypes.byref(found), ctypes.byref(slot))
        if number != 0:
            _raise(number, slot)
        return found.value == 1

    def get_many(self, keys):
        """The values of `keys` from one generation of the store, as {key: bytes}; a key with no
        record is left out."""
        names = [_utf8(key, "key") for key in keys]
        count = len(names)
        array = (ctypes.c_char_p * max(count, 1))(*names)
        values, lengths = (ctypes.c_void_p * max(count, 1))(), (ctypes.c_size_t * max(count, 1))()
        slot = errors.error_slot()
        number = c.lib.keybay_get_many(self._open_handle(), array, count, values, lengths, ctypes.byref(slot))
        if number != 0:
            _raise(number, slot)
        found = {}
        try:
            for i, key in enumerate(keys):
                if values[i]:
                    found[key] = ctypes.string_at(values[i], lengths[i])
        finally:
            for i in range(count):
                c.lib.keybay_free_value(values[i], lengths[i])
        return found

    def clear_all(self):
        """Removes every record in one write; the store, its root and its methods stay."""
        slot = errors.error_slot()
        number = c.lib.keybay_clear_all(self._open_handle(), ctypes.byref(slot))
        if number != 0:
            _raise(number, slot)

    def verify(self, method_id, *, interaction=None):
        """Runs the method's ceremony and checks the secret, changing nothing; keybay.WrongSecret
        when it does not match. `interaction` defaults to open's."""
        bridge = Bridge(interaction if interaction is not None else self._interaction)
        slot = errors.error_slot()
        number = c.lib.keybay_verify(self._open_handle(), _utf8(method_id, "method_id"), bridge.pointer(), ctypes.byref(slot))
        if number != 0:
            _raise(number, slot, bridge)

    def unlock(self, seconds=900):
        """Hands the open store to the keybay agent for `seconds` (0: until keybay.lock), as
        `keybay-methods unlock --for` does; returns when the agent forgets it (Unix seconds), or
        None for never."""
        if not isinstance(seconds, int) or isinstance(seconds, bool) or not 0 <= seconds <= 0xFFFFFFFF:
            raise ValueError(f"seconds must be an int from 0 to 2**32-1, not {seconds!r}")
        until, slot = ctypes.c_int64(), errors.error_slot()
        number = c.lib.keybay_unlock(self._open_handle(), seconds, ctypes.byref(until), ctypes.byref(slot))
        if number != 0:
            _raise(number, slot)
        return until.value or None

    def keys(self):
        """Every key, in ascending byte order."""
        keys, count, slot = ctypes.POINTER(ctypes.c_char_p)(), ctypes.c_size_t(), errors.error_slot()
        number = c.lib.keybay_keys(self._open_handle(), ctypes.byref(keys), ctypes.byref(count), ctypes.byref(slot))
        if number != 0:
            _raise(number, slot)
        try:
            return [keys[i].decode("utf-8") for i in range(count.value)]
        finally:
            c.lib.keybay_free_strings(keys, count.value)

    def export(self, recipients, keys=(), *, allow_agent=False):
        """The records (or those of `keys`) as an age file (bytes) encrypted to `recipients`
        (age1... X25519 strings), never plaintext (docs/format.md, "Exports"). Through the keybay
        agent only with `allow_agent`."""
        if isinstance(recipients, str):
            recipients = [recipients]
        chosen = [_utf8(r, "recipient") for r in recipients]
        wanted = [_utf8(k, "key") for k in keys]
        recipient_array = (ctypes.c_char_p * max(len(chosen), 1))(*chosen)
        key_array = (ctypes.c_char_p * max(len(wanted), 1))(*wanted)
        file, length, slot = ctypes.c_void_p(), ctypes.c_size_t(), errors.error_slot()
        number = c.lib.keybay_export(self._open_handle(), recipient_array, len(chosen), key_array, len(wanted),
                                     KEYBAY_EXPORT_ALLOW_AGENT if allow_agent else 0, ctypes.byref(file), ctypes.byref(length),
                                     ctypes.byref(slot))
        if number != 0:
            _raise(number, slot)
        return _taken_bytes(file, length)

    def import_age(self, data, identity, *, replace=False, dry_run=False):
        """Imports an export (`data`, bytes) with an age identity file's contents (`identity`:
        bytes or str, `age-keygen`'s format). Returns the counts {"imported", "unchanged",
        "replaced", "conflicts"}: a conflict (another value stored) is kept unless `replace`."""
        file = bytearray(memoryview(data))
        secret = bytearray(identity.encode("utf-8") if isinstance(identity, str) else memoryview(identity))
        try:
            report = c.ImportReport()
            report.struct_size = ctypes.sizeof(c.ImportReport)
            slot = errors.error_slot()
            file_buffer = (ctypes.c_char * len(file)).from_buffer(file) if file else None
            identity_buffer = (ctypes.c_char * len(secret)).from_buffer(secret) if secret else None
            flags = (KEYBAY_IMPORT_REPLACE if replace else 0) | (KEYBAY_IMPORT_DRY_RUN if dry_run else 0)
            number = c.lib.keybay_import_age(self._open_handle(), file_buffer, len(file), identity_buffer, len(secret), flags,
                                             ctypes.byref(report), ctypes.byref(slot))
            del file_buffer, identity_buffer
            if number != 0:
                _raise(number, slot)
            return {"imported": report.imported, "unchanged": report.unchanged, "replaced": report.replaced,
                    "conflicts": report.conflicts}
        finally:
            if secret:
                ctypes.memset((ctypes.c_char * len(secret)).from_buffer(secret), 0, len(secret))

    def enroll(self, plugin, label=None, *, interaction=None, **options):
        """Enrolls an unlock method of `plugin`; returns its id. `interaction` defaults to open's."""
        bridge = Bridge(interaction if interaction is not None else self._interaction)
        strings = _option_strings(options)
        method, slot = ctypes.c_void_p(), errors.error_slot()
        number = c.lib.keybay_enroll(self._open_handle(), _utf8(plugin, "plugin"),
                                     None if label is None else _utf8(label, "label"),
                                     strings, bridge.pointer(), ctypes.byref(method), ctypes.byref(slot))
        if number != 0:
            _raise(number, slot, bridge)
        method_id = c.take_string(method.value)
        if bridge.show_secret_failed:
            # The secret was stored but the host never showed it: take the method back.
            self.remove_method(method_id)
            raise errors.make(errors.CODE_NAMES.index("interaction-required") + 1,
                              "show_secret raised; the method was removed again", method_id=method_id) from bridge.failure
        return method_id

    def remove_method(self, method_id, *, interaction=None):
        """Removes a method (no credential needed); with none left the store is platform-only."""
        bridge = Bridge(interaction if interaction is not None else self._interaction)
        slot = errors.error_slot()
        number = c.lib.keybay_remove_method(self._open_handle(), _utf8(method_id, "method_id"), bridge.pointer(), ctypes.byref(slot))
        if number != 0:
            _raise(number, slot, bridge)


def open(app_id, *, root=None, method=None, interaction=None, no_input=False, plugin_dirs=None, tries=1):
    """Opens the application's store (created, platform-only, when nothing exists). A protected
    store opens with `method`, else its only method, else the one `interaction.choose(methods)`
    returns, else keybay.AuthenticationRequired listing them in `.methods`; a wrong secret is
    asked again up to `tries` asks in all."""
    options = _options(app_id, root, method, no_input, plugin_dirs, tries)
    bridge = Bridge(interaction)
    slot = errors.error_slot()
    handle = c.lib.keybay_open(ctypes.byref(options), bridge.pointer(), ctypes.byref(slot))
    if not handle:
        _raise(errors.CODE_NAMES.index("invalid-argument") + 1, slot, bridge)
    return Store(handle, interaction, bridge)


def status(app_id, *, root=None, plugin_dirs=None):
    """What is on disk, as a keybay.Status (its `methods` keybay.Method objects; its keys those
    `keybay-methods status --json` prints); creates and unlocks nothing."""
    options = _options(app_id, root, plugin_dirs=plugin_dirs)
    info, slot = ctypes.POINTER(c.StatusInfo)(), errors.error_slot()
    number = c.lib.keybay_status_get(ctypes.byref(options), ctypes.byref(info), ctypes.byref(slot))
    if number != 0:
        _raise(number, slot)
    try:
        return Status(info.contents, lambda: _status_document(options))
    finally:
        c.lib.keybay_free_status(info)


def _status_document(options):
    """The object `keybay-methods status --json` prints (keybay_status_json): what `status[key]`
    reads, asked for only when a key is read."""
    out, slot = ctypes.c_void_p(), errors.error_slot()
    number = c.lib.keybay_status_json(ctypes.byref(options), ctypes.byref(out), ctypes.byref(slot))
    if number != 0:
        _raise(number, slot)
    return json.loads(c.take_string(out.value))


def lock(app_id, *, root=None, plugin_dirs=None):
    """Makes the keybay agent forget the store; True when it held it (nothing is opened)."""
    options = _options(app_id, root, plugin_dirs=plugin_dirs)
    forgotten, slot = ctypes.c_int(), errors.error_slot()
    number = c.lib.keybay_lock(ctypes.byref(options), ctypes.byref(forgotten), ctypes.byref(slot))
    if number != 0:
        _raise(number, slot)
    return forgotten.value == 1


def reset(app_id, *, root=None, plugin_dirs=None):
    """Removes the store and its root: every record is lost. Idempotent; needs no credential."""
    options = _options(app_id, root, plugin_dirs=plugin_dirs)
    slot = errors.error_slot()
    number = c.lib.keybay_reset(ctypes.byref(options), ctypes.byref(slot))
    if number != 0:
        _raise(number, slot)
