# SPDX-License-Identifier: Apache-2.0
"""Store.export and Store.import_age over keybay_export and keybay_import_age, checked with
Debian's age and age-keygen (real processes)."""
import subprocess

import pytest

import keybay


@pytest.fixture
def age_key(tmp_path):
    path = tmp_path / "key.txt"
    subprocess.run(["age-keygen", "-o", str(path)], check=True, capture_output=True)
    recipient = subprocess.run(["age-keygen", "-y", str(path)], check=True, capture_output=True, text=True).stdout.strip()
    return path, recipient


def test_export_is_read_by_age_and_imports_back(app_id, age_key, tmp_path):
    path, recipient = age_key
    with keybay.open(app_id) as store:
        store.set("alice", b"s3cret")
        store.set("bob", "hunter2")
        exported = store.export([recipient])
        only_alice = store.export(recipient, keys=["alice"])
    shown = subprocess.run(["age", "-d", "-i", str(path)], input=exported, capture_output=True, check=True).stdout
    assert shown == b"keybay-export/v1\nalice czNjcmV0\nbob aHVudGVyMg==\n"
    assert subprocess.run(["age", "-d", "-i", str(path)], input=only_alice, capture_output=True).stdout == b"keybay-export/v1\nalice czNjcmV0\n"

    other = app_id[:100] + ".copy"
    try:
        with keybay.open(other) as target:
            assert target.import_age(exported, path.read_bytes(), dry_run=True) == {"imported": 2, "unchanged": 0, "replaced": 0, "conflicts": 0}
            assert target.keys() == []
            assert target.import_age(exported, path.read_text()) == {"imported": 2, "unchanged": 0, "replaced": 0, "conflicts": 0}
            assert target.get("bob") == b"hunter2"
            target.set("bob", "changed")
            assert target.import_age(exported, path.read_bytes())["conflicts"] == 1
            assert target.get("bob") == b"changed"
            assert target.import_age(exported, path.read_bytes(), replace=True)["replaced"] == 1
            assert target.get("bob") == b"hunter2"
    finally:
        keybay.reset(other)


def test_refusals_are_typed(app_id, age_key):
    path, recipient = age_key
    with keybay.open(app_id) as store:
        store.set("alice", b"s3cret")
        with pytest.raises(keybay.Error) as bad:
            store.export(["age1notarecipient"])
        assert bad.value.code == "invalid-argument"
        exported = bytearray(store.export([recipient]))
        exported[-1] ^= 1
        with pytest.raises(keybay.Error) as damaged:
            store.import_age(bytes(exported), path.read_bytes())
        assert damaged.value.code == "integrity"
        stranger = subprocess.run(["age-keygen"], capture_output=True, check=True).stdout
        exported[-1] ^= 1
        with pytest.raises(keybay.Error) as wrong:
            store.import_age(bytes(exported), stranger)
        assert wrong.value.code == "wrong-secret"
