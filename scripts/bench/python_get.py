# SPDX-License-Identifier: Apache-2.0
"""keybay-bench's Python row: Store.get of the keybay package, against keyring's SecretService
backend get_password on the same gnome-keyring, alternating in one process.

    python_get.py APP COUNT OUT

The bench made the store (record k/0) and the keyring item (service keybay-bench, user bench);
the medians in nanoseconds go to OUT as "ours reference".
"""
import statistics
import sys
import time

import keybay
from keyring.backends import SecretService


def main():
    app, count, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    backend = SecretService.Keyring()
    ours, theirs = [], []
    with keybay.open(app, no_input=True) as store:
        if store.get("k/0") is None or backend.get_password("keybay-bench", "bench") is None:
            sys.exit("python_get: the record or the keyring item is missing")
        for _ in range(count):
            t0 = time.perf_counter_ns()
            store.get("k/0")
            t1 = time.perf_counter_ns()
            backend.get_password("keybay-bench", "bench")
            t2 = time.perf_counter_ns()
            ours.append(t1 - t0)
            theirs.append(t2 - t1)
    with open(out, "w") as f:
        f.write(f"{statistics.median(ours)} {statistics.median(theirs)}\n")


main()
