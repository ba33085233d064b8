#!/usr/bin/env bash
# The main job: installs what is missing, builds the CLI and walks through it against a
# throwaway store in a temporary XDG directory (nothing under your real home is touched).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release   # the CLI and its plugins
bin="$PWD/.build/release/keybay-methods"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_DATA_HOME="$tmp/data" XDG_STATE_HOME="$tmp/state" KEYBAY_APP_ID=com.example.walkthrough

show() { printf '\n$ keybay-methods'; printf ' %q' "$@"; }
step() { show "$@"; echo; "$bin" "$@"; }
expect_exit() { local want=$1; shift; show "$@"; printf '   # expect exit %s\n' "$want"
  set +e; "$bin" "$@"; local got=$?; set -e
  echo "(exit $got)"; [ "$got" -eq "$want" ] || { echo "walkthrough: expected exit $want, got $got" >&2; exit 1; }; }

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
step reset --yes
step status
echo; echo "walkthrough: ok"
