#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: installs what is missing, builds the CLI and walks through it against a
# throwaway store in a temporary XDG directory (nothing under your real home is touched).
# KEYBAY_WALKTHROUGH_BIN=path/to/keybay-methods walks through a CLI already built (scripts/test.sh
# does, with the debug build), without setup or build.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${KEYBAY_WALKTHROUGH_BIN:-}" ]; then
  bin=$(realpath "$KEYBAY_WALKTHROUGH_BIN")
else
  scripts/setup.sh
  swift build -c release   # the CLI and its plugins
  bin="$PWD/.build/release/keybay-methods"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A runtime directory of its own: the agent `unlock` starts listens there (and ends with it).
mkdir -m 0700 "$tmp/run"
export XDG_DATA_HOME="$tmp/data" XDG_STATE_HOME="$tmp/state" XDG_RUNTIME_DIR="$tmp/run" KEYBAY_APP_ID=com.example.walkthrough

show() { printf '\n$ keybay-methods'; printf ' %q' "$@"; }
step() { show "$@"; echo; "$bin" "$@"; }
expect_exit() { local want=$1; shift; show "$@"; printf '   # expect exit %s\n' "$want"
  set +e; "$bin" "$@"; local got=$?; set -e
  echo "(exit $got)"; [ "$got" -eq "$want" ] || { echo "walkthrough: expected exit $want, got $got" >&2; exit 1; }; }
# with_secrets WANT FILE3 FILE4 ARGS...: the command with FILE3 on descriptor 3 and FILE4 on 4.
with_secrets() { local want=$1 f3=$2 f4=$3; shift 3; show "$@"
  printf ' 3<%s' "${f3##*/}"; [ "$f4" = /dev/null ] || printf ' 4<%s' "${f4##*/}"; printf '   # expect exit %s\n' "$want"
  set +e; "$bin" "$@" 3<"$f3" 4<"$f4"; local got=$?; set -e
  [ "$want" -eq 0 ] || echo "(exit $got)"
  [ "$got" -eq "$want" ] || { echo "walkthrough: expected exit $want, got $got" >&2; exit 1; }; }
only_method() { "$bin" list --json | sed -n 's/.*"id":"\([0-9a-f]\{32\}\)".*/\1/p'; }

step status
step init
step set service/token "correct horse"
printf 'line one\nline two\n' > "$tmp/value"
printf '\n$ keybay-methods set notes/multiline --stdin < value\n'; "$bin" set notes/multiline --stdin < "$tmp/value"
step get service/token; echo
step keys
step status --json
expect_exit 3 get no/such/key
expect_exit 2 set "not a key" value
expect_exit 1 init

echo; echo "# the platform root lives apart from the store:"
ls -l "$XDG_STATE_HOME/keybay/$KEYBAY_APP_ID" "$XDG_DATA_HOME/keybay/$KEYBAY_APP_ID"
echo; echo "# delete the root: the store can no longer be opened, and is left as it was"
mv "$XDG_STATE_HOME/keybay/$KEYBAY_APP_ID/file-root.key" "$tmp/root.saved"
expect_exit 1 get service/token
mv "$tmp/root.saved" "$XDG_STATE_HOME/keybay/$KEYBAY_APP_ID/file-root.key"
step get service/token; echo

echo; echo "# an unlock method: the store then opens only with the root AND a passphrase."
echo "# (fast Argon2id parameters here; without --opt, enroll calibrates to about 1 s)"
fast=(--opt memory-kib=8192 --opt iterations=1 --opt lanes=1)
printf 'correct horse battery staple\n' > "$tmp/passphrase"
printf 'a new and longer passphrase\n' > "$tmp/new-passphrase"
with_secrets 0 "$tmp/passphrase" /dev/null enroll passphrase --label walkthrough "${fast[@]}" --passphrase-fd 3
step list
expect_exit 4 get service/token --no-input
with_secrets 0 "$tmp/passphrase" /dev/null get service/token --no-input --passphrase-fd 3; echo

echo; echo "# change the passphrase in one step: the old one stops working, the new one opens"
with_secrets 0 "$tmp/passphrase" "$tmp/new-passphrase" change "$(only_method)" "${fast[@]}" --passphrase-fd 3 --new-passphrase-fd 4
with_secrets 1 "$tmp/passphrase" /dev/null get service/token --no-input --passphrase-fd 3
with_secrets 0 "$tmp/new-passphrase" /dev/null get service/token --no-input --passphrase-fd 3; echo
passphrase_id=$(only_method)

echo; echo "# unlock once for a while: the per-user agent holds the open store, and get asks nothing"
with_secrets 0 "$tmp/new-passphrase" /dev/null unlock --for 10m --passphrase-fd 3
step get service/token --no-input; echo
step status
step lock
expect_exit 4 get service/token --no-input

echo; echo "# a recovery key, shown once: the way back in when the passphrase is forgotten"
with_secrets 0 "$tmp/new-passphrase" /dev/null enroll recovery --json --method "$passphrase_id" --passphrase-fd 3 > "$tmp/recovery.json"
cat "$tmp/recovery.json"
recovery_id=$(sed -n 's/.*"methodId":"\([0-9a-f]\{32\}\)".*/\1/p' "$tmp/recovery.json")
# typed back in lower case with spaces instead of dashes: both are forgiven
sed -n 's/.*"recoveryKey":"\([^"]*\)".*/\1/p' "$tmp/recovery.json" | tr 'A-Z-' 'a-z ' > "$tmp/recovery-key"
step list
with_secrets 0 "$tmp/recovery-key" /dev/null get service/token --no-input --method "$recovery_id" --recovery-key-fd 3; echo

echo; echo "# remove both methods: the store is protected by its platform root alone again"
with_secrets 0 "$tmp/recovery-key" /dev/null remove "$recovery_id" --method "$recovery_id" --recovery-key-fd 3
with_secrets 0 "$tmp/new-passphrase" /dev/null remove "$passphrase_id" --passphrase-fd 3
step get service/token; echo

echo; echo "# a FIDO2 security key is one more method; without a key plugged in it is listed as unavailable"
"$bin" plugins | grep '^fido2 ' | tee "$tmp/fido2"
grep -q 'not available' "$tmp/fido2" || [ -n "$(ls /dev/hidraw* 2>/dev/null)" ] || { echo "walkthrough: fido2 should be unavailable without a key" >&2; exit 1; }
step reset --yes
step status
step lock --all
echo; echo "walkthrough: ok"
