#!/usr/bin/env bash
# Runs every test: installs what is missing, then `swift test` (Swift Testing).
# Long versions of the harnesses: KEYBAY_CRASH_RUNS=2000 scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
swift test --skip-build
