#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The side-by-side benchmark table (docs/performance.md): installs the references if missing
# (Debian's age and cryptsetup-bin), builds in release mode, runs keybay-bench. The bench runs in
# a private D-Bus session with a throwaway gnome-keyring (HOME in a temporary directory, never
# your own keyring) for the secret-service row.
#   scripts/bench.sh [RUNS [ROW...]]     (default 21 alternating runs per row, every row)
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
# The C API rows' program, against this build's libkeybay.so (run path: the build directory);
# the Python row needs keyring's SecretService backend.
bin=$(swift build -c release --show-bin-path)
ln -sf libkeybay.so "$bin/libkeybay.so.1"  # the soname, which the build directory lacks
cc -std=c11 -O2 -Wall -Wextra -Werror -I Sources/CKeybay/include scripts/bench/capi_get.c -o "$bin/capi_get" \
  -L "$bin" -Wl,-rpath,"$bin" -lkeybay $(pkg-config --cflags --libs libsecret-1)
python3 -c 'import keyring.backends.SecretService, secretstorage' 2>/dev/null || python3 -m pip install -q keyring secretstorage
export KEYBAY_BENCH_SCRIPTS=$PWD/scripts/bench KEYBAY_BENCH_PYTHON=$(command -v python3)
keyring_home=$(mktemp -d /tmp/keybay-bench-keyring-XXXXXX)
trap 'rm -rf "$keyring_home"' EXIT
# The integration rows: this build's helpers installed in a prefix of the bench's own, and git's
# libsecret helper built from the source Debian's git ships (a copy: /usr/share stays untouched).
make -s install BIN="$PWD/.build/release" PREFIX="$keyring_home/prefix" PREFIX_RECORD= >/dev/null
libsecret_source=/usr/share/doc/git/contrib/credential/libsecret
if [ -f "$libsecret_source/git-credential-libsecret.c" ]; then
  cp -r "$libsecret_source" "$keyring_home/libsecret"
  make -s -C "$keyring_home/libsecret" >/dev/null 2>&1 && export KEYBAY_BENCH_LIBSECRET_HELPER="$keyring_home/libsecret/git-credential-libsecret"
fi
export KEYBAY_BENCH_PREFIX="$keyring_home/prefix" KEYBAY_BENCH_PYTHON="$(command -v python3)" KEYBAY_BENCH_PYTHONPATH="$PWD/bindings/python"
runs=${1:-21}
[ $# -gt 0 ] && shift
HOME=$keyring_home XDG_RUNTIME_DIR=$keyring_home dbus-run-session -- sh -c \
  'printf bench | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$0" "$@"' \
  .build/release/keybay-bench "$runs" "$@"
