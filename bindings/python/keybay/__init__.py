# SPDX-License-Identifier: Apache-2.0
"""Keybay for Linux from Python: the encrypted per-application secret store of libkeybay.so.1.

    with keybay.open("com.example.notes") as store:
        store.set("api/token", "s3cr3t")

docs/python.md in the repository describes the API, the errors and the interaction.
"""
from . import errors as _errors
from ._library import lib as _lib
from ._version import __version__
from .errors import CODE_NAMES, Error
from .interaction import MESSAGE_INFO, MESSAGE_WARNING, default_interaction
from .methods import AskRequest, Method, Status
from .store import Store, lock, open, reset, status

for _name in _errors.CLASS_NAMES:
    globals()[_name] = getattr(_errors, _name)


def library_version():
    """The loaded libkeybay's release, e.g. "1.2.0"."""
    return _lib.keybay_version().decode("utf-8")


__all__ = ["open", "status", "reset", "lock", "Store", "Status", "Method", "AskRequest", "Error", "CODE_NAMES", "MESSAGE_INFO",
           "MESSAGE_WARNING", "default_interaction", "library_version", *_errors.CLASS_NAMES]
