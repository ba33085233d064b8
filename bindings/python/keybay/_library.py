# SPDX-License-Identifier: Apache-2.0
"""Loads libkeybay.so.1 and declares the C API's functions (keybay.h, version 1, release 1.2)."""
import ctypes
import os

try:  # written by `make install` and by `pip install` (_build/keybay_build.py): the library installed with it
    from ._installed import LIBRARY as INSTALLED_LIBRARY
except ImportError:  # the source tree
    INSTALLED_LIBRARY = None

SONAME = "libkeybay.so.1"
INTERACTION_ABI_VERSION = 1


def _load():
    # KEYBAY_LIBRARY names the file and is insisted on: no fallback to another copy.
    named = os.environ.get("KEYBAY_LIBRARY")
    if named:
        try:
            return ctypes.CDLL(named)
        except OSError as error:
            raise ImportError(f"keybay: cannot load KEYBAY_LIBRARY={named}: {error}") from error
    # The library this package was installed with, when it is still there (else the soname).
    missing = ""
    if INSTALLED_LIBRARY:
        if os.path.exists(INSTALLED_LIBRARY):
            try:
                return ctypes.CDLL(INSTALLED_LIBRARY)
            except OSError as error:
                raise ImportError(f"keybay: cannot load {INSTALLED_LIBRARY}, the library this package was installed "
                                  f"with (keybay/_installed.py): {error}") from error
        missing = f"{INSTALLED_LIBRARY}, the library this package was installed with, is gone; "
    try:
        return ctypes.CDLL(SONAME)
    except OSError as first:
        from ctypes import util  # only for this fallback: it is slow to import and runs programs
        found = util.find_library("keybay")
        # Only the soname of this ABI: a libkeybay.so.2 would be another API.
        if found and os.path.basename(found) == SONAME:
            return ctypes.CDLL(found)
        raise ImportError(f"keybay: {missing}cannot load {SONAME} ({first}); install it (make install) "
                          "or set KEYBAY_LIBRARY to its file") from first


class OpenOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("app_id", ctypes.c_char_p),
                ("root", ctypes.c_char_p),
                ("method_id", ctypes.c_char_p),
                ("plugin_dirs", ctypes.POINTER(ctypes.c_char_p)),
                ("no_input", ctypes.c_int),
                ("tries", ctypes.c_int)]


class MethodInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("id", ctypes.c_char_p),
                ("plugin", ctypes.c_char_p),
                ("label", ctypes.c_char_p),
                ("needs_device", ctypes.c_int)]


class AskRequest(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("kind", ctypes.c_int),
                ("secret_kind", ctypes.c_char_p),
                ("prompt", ctypes.c_char_p),
                ("method_id", ctypes.c_char_p),
                ("plugin_id", ctypes.c_char_p),
                ("label", ctypes.c_char_p),
                ("app_id", ctypes.c_char_p),
                ("tries_left", ctypes.c_int),
                ("is_retry", ctypes.c_int)]


class StatusInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("state", ctypes.c_char_p),
                ("store_path", ctypes.c_char_p),
                ("root", ctypes.c_char_p),
                ("root_location", ctypes.c_char_p),
                ("methods", ctypes.POINTER(MethodInfo)),
                ("method_count", ctypes.c_size_t),
                ("unlocked", ctypes.c_int),
                ("unlocked_until", ctypes.c_int64)]


class ImportReport(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32),
                ("imported", ctypes.c_size_t),
                ("unchanged", ctypes.c_size_t),
                ("replaced", ctypes.c_size_t),
                ("conflicts", ctypes.c_size_t)]


# The answer buffer and the shown secret are void pointers, not c_char_p: ctypes would turn a
# c_char_p argument into an immutable bytes copy that nobody can wipe.
ASK_SECRET = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                              ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t))
CONFIRM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
MESSAGE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)
SHOW_SECRET = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
IS_CANCELLED = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
CHOOSE_METHOD = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(MethodInfo), ctypes.c_size_t,
                                 ctypes.POINTER(ctypes.c_size_t))
ASK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(AskRequest), ctypes.c_void_p, ctypes.c_size_t,
                       ctypes.POINTER(ctypes.c_size_t))


class Interaction(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32),
                ("struct_size", ctypes.c_uint32),
                ("context", ctypes.c_void_p),
                ("ask_secret", ASK_SECRET),
                ("confirm", CONFIRM),
                ("message", MESSAGE),
                ("show_secret", SHOW_SECRET),
                ("is_cancelled", IS_CANCELLED),
                ("choose_method", CHOOSE_METHOD),
                ("ask", ASK)]


lib = _load()
_p = ctypes.c_void_p
_err = ctypes.POINTER(ctypes.c_void_p)  # keybay_error **
_s = ctypes.c_char_p
for name, result, arguments in [
        ("keybay_error_code", ctypes.c_int, [_p]),
        ("keybay_error_name", _s, [_p]),
        ("keybay_error_message", _s, [_p]),
        ("keybay_error_path", _s, [_p]),
        ("keybay_error_plugin_id", _s, [_p]),
        ("keybay_error_method_id", _s, [_p]),
        ("keybay_error_reason", _s, [_p]),
        ("keybay_error_tries_left", ctypes.c_int, [_p]),
        ("keybay_error_took_effect", ctypes.c_int, [_p]),
        ("keybay_error_methods", ctypes.POINTER(MethodInfo), [_p, ctypes.POINTER(ctypes.c_size_t)]),
        ("keybay_error_free", None, [_p]),
        ("keybay_code_name", _s, [ctypes.c_int]),
        ("keybay_open", _p, [ctypes.POINTER(OpenOptions), ctypes.POINTER(Interaction), _err]),
        ("keybay_close", None, [_p]),
        ("keybay_get", ctypes.c_int, [_p, _s, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t), _err]),
        ("keybay_free_value", None, [_p, ctypes.c_size_t]),
        ("keybay_set", ctypes.c_int, [_p, _s, _p, ctypes.c_size_t, _err]),
        ("keybay_delete", ctypes.c_int, [_p, _s, _err]),
        ("keybay_contains", ctypes.c_int, [_p, _s, ctypes.POINTER(ctypes.c_int), _err]),
        ("keybay_get_many", ctypes.c_int, [_p, ctypes.POINTER(_s), ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p),
                                           ctypes.POINTER(ctypes.c_size_t), _err]),
        ("keybay_clear_all", ctypes.c_int, [_p, _err]),
        ("keybay_verify", ctypes.c_int, [_p, _s, ctypes.POINTER(Interaction), _err]),
        ("keybay_unlock", ctypes.c_int, [_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int64), _err]),
        ("keybay_lock", ctypes.c_int, [ctypes.POINTER(OpenOptions), ctypes.POINTER(ctypes.c_int), _err]),
        ("keybay_status_get", ctypes.c_int, [ctypes.POINTER(OpenOptions), ctypes.POINTER(ctypes.POINTER(StatusInfo)), _err]),
        ("keybay_free_status", None, [ctypes.POINTER(StatusInfo)]),
        ("keybay_keys", ctypes.c_int, [_p, ctypes.POINTER(ctypes.POINTER(_s)), ctypes.POINTER(ctypes.c_size_t), _err]),
        ("keybay_free_strings", None, [ctypes.POINTER(_s), ctypes.c_size_t]),
        ("keybay_enroll", ctypes.c_int, [_p, _s, _s, ctypes.POINTER(_s), ctypes.POINTER(Interaction),
                                         ctypes.POINTER(ctypes.c_void_p), _err]),
        ("keybay_remove_method", ctypes.c_int, [_p, _s, ctypes.POINTER(Interaction), _err]),
        ("keybay_status_json", ctypes.c_int, [ctypes.POINTER(OpenOptions), ctypes.POINTER(ctypes.c_void_p), _err]),
        ("keybay_reset", ctypes.c_int, [ctypes.POINTER(OpenOptions), _err]),
        ("keybay_free_string", None, [_p]),
        ("keybay_version", _s, []),
        ("keybay_default_interaction", ctypes.POINTER(Interaction), []),
        ("keybay_export", ctypes.c_int, [_p, ctypes.POINTER(_s), ctypes.c_size_t, ctypes.POINTER(_s), ctypes.c_size_t, ctypes.c_uint,
                                         ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t), _err]),
        ("keybay_import_age", ctypes.c_int, [_p, _p, ctypes.c_size_t, _p, ctypes.c_size_t, ctypes.c_uint,
                                             ctypes.POINTER(ImportReport), _err])]:
    function = getattr(lib, name)
    function.restype = result
    function.argtypes = arguments


def text(value):
    """A C string from the library as str (None stays None)."""
    return None if value is None else value.decode("utf-8", "replace")


def take_string(pointer):
    """A string the library handed out (keybay_free_string's), as str; frees it."""
    if not pointer:
        return None
    try:
        return ctypes.string_at(pointer).decode("utf-8")
    finally:
        lib.keybay_free_string(pointer)
