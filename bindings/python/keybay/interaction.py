# SPDX-License-Identifier: Apache-2.0
"""A Python interaction object as a keybay_interaction: ctypes callbacks that never raise into C."""
import ctypes

from . import _library as c
from .errors import ERROR_CLASSES
from .methods import Method, ask_request_from, methods_from

KEYBAY_ERR_CANCELLED = 22
KEYBAY_ERR_INTERACTION_REQUIRED = 26
MESSAGE_INFO = 0
MESSAGE_WARNING = 1
Cancelled = ERROR_CLASSES[KEYBAY_ERR_CANCELLED]


def _wipe(buffer):
    ctypes.memset((ctypes.c_char * len(buffer)).from_buffer(buffer), 0, len(buffer))


class DefaultInteraction:
    """The library's own interaction (keybay_default_interaction): it asks through the pinentry
    KEYBAY_PINENTRY names, else on the controlling terminal, else through `pinentry` on PATH.
    Made by `default_interaction()`; pass it as `interaction=`."""

    __slots__ = ("_pointer",)

    def __init__(self, pointer):
        self._pointer = pointer

    def __repr__(self):
        return "keybay.default_interaction()"


def default_interaction():
    """The library's terminal-or-pinentry interaction, or None when this process has neither a
    terminal nor a pinentry to ask through (decide then whether to fail or to ask another way)."""
    pointer = c.lib.keybay_default_interaction()
    return DefaultInteraction(pointer) if pointer else None


class Bridge:
    """Holds the keybay_interaction and its callbacks for the length of one call.

    `failure` keeps the first exception a callback raised (other than Cancelled), so the call's
    keybay.Error can name it as its cause.
    """

    def __init__(self, interaction):
        self.interaction = interaction
        self.failure = None
        self.show_secret_failed = False
        self._callbacks = []  # referenced here so ctypes does not free them while C holds them
        self._default = None
        if interaction is None:
            self.struct = None
            return
        if isinstance(interaction, DefaultInteraction):
            # The library's static struct, passed as it is: the library then asks with the whole request.
            self.struct, self._default = None, interaction._pointer
            return
        self.struct = c.Interaction()
        self.struct.abi_version = c.INTERACTION_ABI_VERSION
        self.struct.struct_size = ctypes.sizeof(c.Interaction)
        self._offer("ask_secret", c.ASK_SECRET, self._ask_secret)
        self._offer("confirm", c.CONFIRM, self._confirm)
        self._offer("message", c.MESSAGE, self._message)
        self._offer("show_secret", c.SHOW_SECRET, self._show_secret)
        self._offer("is_cancelled", c.IS_CANCELLED, self._is_cancelled)
        # ask(request) is preferred by the library over ask_secret(prompt, is_confirmation).
        self._offer("ask", c.ASK, self._ask, "ask")
        self._offer("choose_method", c.CHOOSE_METHOD, self._choose, "choose")

    def _offer(self, name, prototype, function, attribute=None):
        # A method the object lacks stays NULL: "not available", as keybay.h defines it.
        if callable(getattr(self.interaction, attribute or name, None)):
            callback = prototype(function)
            self._callbacks.append(callback)
            setattr(self.struct, name, callback)

    def pointer(self):
        if self._default is not None:
            return self._default
        return None if self.struct is None else ctypes.byref(self.struct)

    def _remember(self, error):
        if self.failure is None:
            self.failure = error

    def _ask_secret(self, _context, prompt, is_confirmation, buf, capacity, length):
        return self._answer(lambda: self.interaction.ask_secret(c.text(prompt), bool(is_confirmation)), buf, capacity, length)

    def _ask(self, _context, request, buf, capacity, length):
        return self._answer(lambda: self.interaction.ask(ask_request_from(request)), buf, capacity, length)

    def _answer(self, asking, buf, capacity, length):
        answer = None
        try:
            given = asking()
            if given is None:
                return KEYBAY_ERR_INTERACTION_REQUIRED
            answer = bytearray(given.encode("utf-8") if isinstance(given, str) else given)
            if len(answer) > capacity:
                self._remember(ValueError(f"the answer is {len(answer)} bytes, the library takes at most {capacity}"))
                return KEYBAY_ERR_INTERACTION_REQUIRED
            if answer:
                ctypes.memmove(buf, (ctypes.c_char * len(answer)).from_buffer(answer), len(answer))
            length[0] = len(answer)
            return 0
        except Cancelled:
            return KEYBAY_ERR_CANCELLED
        except BaseException as error:  # never through C
            self._remember(error)
            return KEYBAY_ERR_INTERACTION_REQUIRED
        finally:
            if answer is not None:
                _wipe(answer)

    def _choose(self, _context, methods, count, chosen):
        try:
            offered = methods_from(methods, count)
            picked = self.interaction.choose(offered)
            if picked is None:
                return KEYBAY_ERR_INTERACTION_REQUIRED
            wanted = picked.id if isinstance(picked, Method) else picked
            for index, method in enumerate(offered):
                if method.id == wanted:
                    chosen[0] = index
                    return 0
            self._remember(ValueError(f"choose returned {picked!r}, which is none of the store's methods"))
            return KEYBAY_ERR_INTERACTION_REQUIRED
        except Cancelled:
            return KEYBAY_ERR_CANCELLED
        except BaseException as error:
            self._remember(error)
            return KEYBAY_ERR_INTERACTION_REQUIRED

    def _confirm(self, _context, question):
        try:
            return 1 if self.interaction.confirm(c.text(question)) else 0
        except BaseException as error:
            if not isinstance(error, Cancelled):
                self._remember(error)
            return 0

    def _message(self, _context, level, line):
        try:
            self.interaction.message(level, c.text(line))
        except BaseException as error:
            self._remember(error)

    def _show_secret(self, _context, label, secret):
        try:
            self.interaction.show_secret(c.text(label), ctypes.string_at(secret).decode("utf-8"))
        except BaseException as error:
            self.show_secret_failed = True
            self._remember(error)

    def _is_cancelled(self, _context):
        try:
            return 1 if self.interaction.is_cancelled() else 0
        except BaseException as error:
            # Fail closed: a broken is_cancelled cancels the wait.
            self._remember(error)
            return 1
