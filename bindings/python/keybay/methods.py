# SPDX-License-Identifier: Apache-2.0
"""keybay.Method, keybay.Status and keybay.AskRequest: what the library hands a host, as values."""
from dataclasses import dataclass
from typing import Optional

from ._library import text


@dataclass(frozen=True)
class Method:
    """One enrolled unlock method: `id` (what `method=` takes), `plugin`, `label`, and
    `needs_device` (True when unlocking needs hardware present, False when not, None when its
    plugin could not be read)."""

    id: str
    plugin: str
    label: str
    needs_device: Optional[bool] = None


def method_from(info):
    """A keybay_method_info as a Method."""
    device = None if info.needs_device < 0 else bool(info.needs_device)
    return Method(text(info.id), text(info.plugin), text(info.label), device)


def methods_from(array, count):
    return [method_from(array[i]) for i in range(count)]


@dataclass(frozen=True)
class AskRequest:
    """One question for a secret, as an interaction's `ask(request)` gets it.

    `kind` is "secret" (unlock or verify an enrolled method), "new" (a new secret) or "confirm"
    (the new secret again); `secret_kind` "passphrase", "PIN" or "recovery key"; `prompt` the
    plugin's line (may be empty); `method_id` the enrolled method it unlocks (None while
    enrolling); `plugin_id`, `label`, `app_id`; `tries_left` (None when unknown); `is_retry` True
    when the last answer was wrong."""

    kind: str
    secret_kind: str
    prompt: str
    method_id: Optional[str]
    plugin_id: Optional[str]
    label: Optional[str]
    app_id: Optional[str]
    tries_left: Optional[int]
    is_retry: bool


ASK_KINDS = ("secret", "new", "confirm")


def ask_request_from(request):
    """A keybay_ask_request as an AskRequest."""
    r = request.contents
    kind = ASK_KINDS[r.kind] if 0 <= r.kind < len(ASK_KINDS) else "secret"
    return AskRequest(kind, text(r.secret_kind), text(r.prompt) or "", text(r.method_id), text(r.plugin_id),
                      text(r.label), text(r.app_id), r.tries_left if r.tries_left >= 0 else None, r.is_retry == 1)


class Status:
    """What is on disk (keybay_status_get): `state` ("absent", "platform-only", "protected",
    "root-only", "store-only"), `store_path`, `root`, `root_location`, `methods` (Method objects),
    `unlocked` (True while the agent holds the store) and `unlocked_until` (Unix seconds, None
    for never or not unlocked). `status["state"]` and the other keys of `keybay-methods status
    --json` still read as they did in 1.1 (read from the store when first asked for: the
    attributes alone read it once)."""

    def __init__(self, info, document):
        self.state = text(info.state)
        self.store_path = text(info.store_path)
        self.root = text(info.root)
        self.root_location = text(info.root_location)
        self.methods = methods_from(info.methods, info.method_count)
        self.unlocked = info.unlocked == 1
        self.unlocked_until = info.unlocked_until or None
        self._load = document
        self._document = None

    def _json(self):
        if self._document is None:
            self._document = self._load()
        return self._document

    def __getitem__(self, key):
        return self._json()[key]

    def get(self, key, default=None):
        return self._json().get(key, default)

    def __repr__(self):
        return f"keybay.Status(state={self.state!r}, methods={self.methods!r})"
