#!/usr/bin/env bash
# The side-by-side benchmark table (docs/performance.md): installs the references if missing
# (Debian's age and cryptsetup-bin), builds in release mode, runs keybay-bench.
#   scripts/bench.sh [RUNS]     (default 21 alternating runs per row)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
missing=()
command -v age >/dev/null || missing+=(age)
command -v cryptsetup >/dev/null || missing+=(cryptsetup-bin)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
swift build -c release
.build/release/keybay-bench "${1:-21}"
