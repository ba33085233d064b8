# SPDX-License-Identifier: Apache-2.0
import pytest

import keybay
from conftest import FAST, Asker


def enroll_passphrase(app_id, passphrase="correct horse battery"):
    asker = Asker(passphrase)
    with keybay.open(app_id) as store:
        store.set("api/token", "s3cr3t")
        method = store.enroll("passphrase", "main", interaction=asker, **FAST)
    return method, asker


def test_enroll_passphrase_asks_twice_and_reopens(app_id):
    method, asker = enroll_passphrase(app_id)
    assert len(method) == 32
    assert asker.asked == [False, True]  # the new passphrase, then its confirmation
    status = keybay.status(app_id)
    assert status["state"] == "protected"
    with keybay.open(app_id, method=method, interaction=Asker(b"correct horse battery")) as store:
        assert store.get("api/token") == b"s3cr3t"


def test_wrong_passphrase_is_wrong_secret(app_id):
    method, _ = enroll_passphrase(app_id)
    with pytest.raises(keybay.WrongSecret) as raised:
        keybay.open(app_id, method=method, interaction=Asker("not it"))
    assert raised.value.code == "wrong-secret" and raised.value.number == 20
    assert raised.value.method_id == method
    assert raised.value.reason is None and raised.value.tries_left is None


def test_no_interaction_is_interaction_required(app_id):
    method, _ = enroll_passphrase(app_id)
    with pytest.raises(keybay.InteractionRequired):
        keybay.open(app_id, method=method)
    with pytest.raises(keybay.InteractionRequired):
        keybay.open(app_id, method=method, interaction=Asker("correct horse battery"), no_input=True)


def test_callbacks_never_raise_through_c(app_id):
    method, _ = enroll_passphrase(app_id)

    class Broken:
        def ask_secret(self, prompt, is_confirmation):
            raise RuntimeError("a bug in the host")

    class Refuses:
        def ask_secret(self, prompt, is_confirmation):
            raise keybay.Cancelled("the user said no")

    with pytest.raises(keybay.InteractionRequired) as raised:
        keybay.open(app_id, method=method, interaction=Broken())
    assert isinstance(raised.value.__cause__, RuntimeError)
    with pytest.raises(keybay.Cancelled) as cancelled:
        keybay.open(app_id, method=method, interaction=Refuses())
    assert cancelled.value.code == "cancelled" and cancelled.value.number == 22
    with pytest.raises(keybay.InteractionRequired):
        keybay.open(app_id, method=method, interaction=Asker(None))


def test_remove_method_leaves_platform_only(app_id):
    method, _ = enroll_passphrase(app_id)
    with keybay.open(app_id, method=method, interaction=Asker("correct horse battery")) as store:
        store.remove_method(method)
    assert keybay.status(app_id)["state"] == "platform-only"
    with keybay.open(app_id) as store:
        assert store["api/token"] == b"s3cr3t"


def test_recovery_key_is_shown_and_opens(app_id):
    asker = Asker(None)
    with keybay.open(app_id) as store:
        store.set("note", "kept")
        method = store.enroll("recovery", interaction=asker)
    assert len(asker.shown) == 1
    label, key = asker.shown[0]
    assert key and label
    with keybay.open(app_id, method=method, interaction=Asker(key)) as store:
        assert store.get("note") == b"kept"
    with pytest.raises(keybay.WrongSecret) as typo:
        keybay.open(app_id, method=method, interaction=Asker(key[:-1] + ("0" if key[-1] != "0" else "1")))
    assert typo.value.reason == "typo-checksum" and typo.value.tries_left is None
    with pytest.raises(keybay.WrongSecret) as short:
        keybay.open(app_id, method=method, interaction=Asker("0000"))
    assert short.value.reason == "typo-length"


def test_recovery_without_show_secret_stores_nothing(app_id):
    class OnlyAsks:
        def ask_secret(self, prompt, is_confirmation):
            return None

    with keybay.open(app_id) as store:
        store.set("k", "v")
        with pytest.raises(keybay.InteractionRequired):
            store.enroll("recovery", interaction=OnlyAsks())
    assert keybay.status(app_id)["state"] == "platform-only"


def test_a_recovery_key_show_secret_could_not_show_is_taken_back(app_id):
    class CannotShow:
        def ask_secret(self, prompt, is_confirmation):
            return None

        def show_secret(self, label, secret):
            raise OSError("the display went away")

    with keybay.open(app_id) as store:
        store.set("k", "v")
        with pytest.raises(keybay.InteractionRequired) as raised:
            store.enroll("recovery", interaction=CannotShow())
        assert isinstance(raised.value.__cause__, OSError)
        assert len(raised.value.method_id) == 32
    assert keybay.status(app_id)["state"] == "platform-only"


ANSWERING_PINENTRY = """#!/bin/sh
# Answers every GETPIN with $ANSWER and counts them in $0.count.
echo "OK Pleased to meet you"
while read -r line; do
  case "$line" in
    GETPIN*) echo x >> "$0.count"; printf 'D %s\\nOK\\n' "$ANSWER" ;;
    BYE*) echo "OK closing connection"; exit 0 ;;
    *) echo OK ;;
  esac
done
"""


def test_the_default_interaction_asks_through_the_named_pinentry(app_id, home, monkeypatch):
    method, _ = enroll_passphrase(app_id)
    pinentry = home / f"pinentry-{app_id}"
    pinentry.write_text(ANSWERING_PINENTRY)
    pinentry.chmod(0o755)
    monkeypatch.setenv("KEYBAY_PINENTRY", str(pinentry))
    monkeypatch.setenv("ANSWER", "correct horse battery")
    asker = keybay.default_interaction()
    assert asker is not None
    with keybay.open(app_id, interaction=asker) as store:
        assert store.get("api/token") == b"s3cr3t"
    assert pinentry.with_name(pinentry.name + ".count").read_text() == "x\n"
    monkeypatch.setenv("ANSWER", "not it")
    with pytest.raises(keybay.WrongSecret) as raised:
        keybay.open(app_id, interaction=keybay.default_interaction())
    assert raised.value.method_id == method
    # A pinentry that names no program: nowhere to ask.
    monkeypatch.setenv("KEYBAY_PINENTRY", str(home / "no-such-pinentry"))
    assert keybay.default_interaction() is None
