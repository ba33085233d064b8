# SPDX-License-Identifier: Apache-2.0
"""keybay.Error and one subclass per KEYBAY_ERR_* code, checked against the library at import."""
import ctypes

from ._library import lib, text
from .methods import methods_from

# KEYBAY_ERR_<n> is CODE_NAMES[n - 1] (keybay.h); the numbers and names are stable.
CODE_NAMES = (
    "invalid-argument", "invalid-key", "value-too-large", "store-full", "store-not-found",
    "already-initialized", "state-conflict", "platform-key-invalidated", "root-unavailable",
    "rolled-back", "protection-mismatch", "authentication-required", "key-changed", "malformed",
    "integrity", "unsupported", "insecure-permissions", "io", "method-not-found", "wrong-secret",
    "locked", "cancelled", "timed-out", "method-unavailable", "pin-required",
    "interaction-required", "plugin-not-found", "plugin-refused", "plugin-failed", "closed",
    "not-found",
)


class Error(Exception):
    """A failed call: `code` is the stable name ("wrong-secret"), `number` the KEYBAY_ERR_* value.

    Each subclass carries its own `number` and `code`, so a host raises `keybay.Cancelled()`.
    `reason` is the stable token naming which cause of several it is ("pin-blocked"), or None;
    `tries_left` the PIN attempts the device says are left, or None when unknown; `methods` the
    store's methods (keybay.Method) when an open must choose one and could not, else None.
    """

    number = None
    code = None

    def __init__(self, message="", *, number=None, code=None, path=None, plugin_id=None, method_id=None,
                 reason=None, tries_left=None, took_effect=False, methods=None):
        if number is not None:
            self.number = number
        if code is not None:
            self.code = code
        super().__init__(f"{message} [{self.code}]" if self.code else message)
        self.message = message
        self.path = path
        self.plugin_id = plugin_id
        self.method_id = method_id
        self.reason = reason
        self.tries_left = tries_left
        self.took_effect = took_effect
        self.methods = methods


def _class_name(code):
    return "".join(part.capitalize() for part in code.split("-"))


# number -> subclass; every subclass is also a module attribute (keybay.WrongSecret).
ERROR_CLASSES = {}
for _number, _code in enumerate(CODE_NAMES, start=1):
    ERROR_CLASSES[_number] = type(_class_name(_code), (Error,), {
        "number": _number, "code": _code,
        "__doc__": f"KEYBAY_ERR_{_code.upper().replace('-', '_')} ({_number}, \"{_code}\").",
        "__module__": "keybay"})
    globals()[_class_name(_code)] = ERROR_CLASSES[_number]
CLASS_NAMES = tuple(_class_name(code) for code in CODE_NAMES)


def _check_table():
    # A library whose numbering differs from ours would give wrong exceptions: refuse to load.
    for number, code in enumerate(CODE_NAMES, start=1):
        given = text(lib.keybay_code_name(number))
        if given != code:
            raise ImportError(f"keybay: the library names code {number} {given!r}, this package expects {code!r}")
    extra = lib.keybay_code_name(len(CODE_NAMES) + 1)
    if extra is not None:
        raise ImportError(f"keybay: the library has a code {len(CODE_NAMES) + 1} ({text(extra)!r}) this package does not know")


_check_table()


def make(number, message, **fields):
    """An error of the right subclass made here (not from a keybay_error)."""
    code = text(lib.keybay_code_name(number)) or f"code-{number}"
    return ERROR_CLASSES.get(number, Error)(message, number=number, code=code, **fields)


def take(pointer, number):
    """The exception for a keybay_error * (frees it); `number` is the call's return code."""
    if not pointer:
        return make(number, "the call failed and gave no details")
    try:
        number = lib.keybay_error_code(pointer)
        count = ctypes.c_size_t()
        listed = lib.keybay_error_methods(pointer, ctypes.byref(count))
        return ERROR_CLASSES.get(number, Error)(
            text(lib.keybay_error_message(pointer)),
            number=number,
            code=text(lib.keybay_error_name(pointer)),
            path=text(lib.keybay_error_path(pointer)),
            plugin_id=text(lib.keybay_error_plugin_id(pointer)),
            method_id=text(lib.keybay_error_method_id(pointer)),
            reason=text(lib.keybay_error_reason(pointer)),
            tries_left=_known(lib.keybay_error_tries_left(pointer)),
            took_effect=lib.keybay_error_took_effect(pointer) == 1,
            methods=methods_from(listed, count.value) if listed else None)
    finally:
        lib.keybay_error_free(pointer)


def _known(count):
    return count if count >= 0 else None


def error_slot():
    """A keybay_error * for a call to set."""
    return ctypes.c_void_p()
