#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test: installs what is missing, builds, runs the Python package's and the credential
# helpers' pytest, the C harnesses and a short fuzz, then `swift test` (Swift Testing).
# Long versions of the harnesses: KEYBAY_CRASH_RUNS=2000 KEYBAY_FUZZ_SECONDS=600 scripts/test.sh
# (sanitizers: scripts/sanitizers.sh; the Debian packages built and installed in a clean root:
# KEYBAY_DEB=1 scripts/test.sh, or scripts/deb-check.sh alone)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
# The Python package (bindings/python) against this build's libkeybay.so, then from a venv on a prefix.
KEYBAY_LIBRARY=.build/debug/libkeybay.so python3 -m pytest -q -p no:cacheprovider bindings/python/tests
# The credential helpers (integrations/): installed from this build, run by real git and as Docker runs them.
KEYBAY_BUILD=.build/debug python3 -m pytest -q -p no:cacheprovider integrations/tests
# The C harnesses (Tests/plugin-harness) against this build.
scripts/plugin-harness.sh
# The main job's walkthrough, on this build (its transcript only when it fails).
KEYBAY_WALKTHROUGH_BIN=.build/debug/keybay-methods scripts/walkthrough.sh > .build/walkthrough.log 2>&1 \
  || { cat .build/walkthrough.log; exit 1; }
tail -1 .build/walkthrough.log
# A short libFuzzer run over every decoder (KEYBAY_FUZZ_SECONDS per target; 0 skips it).
if [ "${KEYBAY_FUZZ_SECONDS:-15}" != 0 ]; then scripts/fuzz.sh "${KEYBAY_FUZZ_SECONDS:-15}"; fi
# The C API's host, four threads on one handle, under ThreadSanitizer (its own build directory).
scripts/sanitizers.sh capi | tail -1
# Every public symbol documented, both documentation archives built (docc; its own scratch build).
scripts/docs.sh | tail -3
# The .debs built, lintian, installed with apt in a debootstrapped root and used there (about 10 minutes).
if [ "${KEYBAY_DEB:-0}" = 1 ]; then scripts/deb-check.sh; fi
swift test --skip-build
