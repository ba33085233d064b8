# SPDX-License-Identifier: Apache-2.0
"""A forked process opens stores and runs isolated methods of its own: it never uses the parent's
plugin helpers or the parent's spawner (docs/python.md, "Processes and fork")."""
import multiprocessing

import keybay
from conftest import FAST, Asker

PASSPHRASE = "forked passphrase"


def protected_store(app_id):
    with keybay.open(app_id) as store:
        store.set("k", "v")
        return store.enroll("passphrase", "main", interaction=Asker(PASSPHRASE), **FAST)


def read(app_id, method):
    with keybay.open(app_id, method=method, interaction=Asker(PASSPHRASE)) as store:
        return store.get("k")


def read_twice_into(queue, app_id, method):
    try:
        queue.put([read(app_id, method), read(app_id, method)])
    except Exception as error:  # reported to the parent, which asserts on it
        queue.put(repr(error))


def test_a_forked_child_opens_a_protected_store_after_the_parent_did(app_id):
    method = protected_store(app_id)
    assert read(app_id, method) == b"v"  # the parent's helper runs now
    fork = multiprocessing.get_context("fork")
    queue = fork.Queue()
    child = fork.Process(target=read_twice_into, args=(queue, app_id, method))
    child.start()
    # Parent and child at once: the parent reads while the child starts helpers of its own.
    assert read(app_id, method) == b"v"
    child.join(20)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive, "the forked child did not finish within 20 s"
    assert child.exitcode == 0
    assert queue.get(timeout=5) == [b"v", b"v"]
