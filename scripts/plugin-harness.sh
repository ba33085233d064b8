#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The C harnesses under Tests/plugin-harness, built with the system C compiler and run with
# their assertions (each exits 1 on a failed check):
#   passphrase_check               libkeybay-passphrase.so through dlopen with a stub host,
#                                  against the argon2 reference CLI
#   virtual_authenticator_check    the virtual CTAP2 authenticator through the real libfido2
# scripts/test.sh runs this after the build; by hand: scripts/plugin-harness.sh [BUILD-DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-.build/debug}
out=.build/plugin-harness
mkdir -p "$out"
cc -std=c11 -Wall -Wextra -Werror -O1 -rdynamic -I Sources/CKeybayPlugin/include -I Plugins/passphrase/include \
  Tests/plugin-harness/passphrase_check.c -o "$out/passphrase_check" -ldl -lsodium -lpthread
cc -std=c11 -Wall -Wextra -Werror -O1 -I Tests/VirtualAuthenticator/include \
  Tests/VirtualAuthenticator/virtual_authenticator.c Tests/plugin-harness/virtual_authenticator_check.c \
  -o "$out/virtual_authenticator_check" -lfido2 -lcrypto -lpthread
status=0
run() { # NAME COMMAND...
  local name=$1; shift
  if "$@" > "$out/$name.log" 2>&1; then
    echo "harness $name: $(tail -1 "$out/$name.log")"
  else
    echo "harness $name: FAILED (log: $out/$name.log)"; grep -E "FAIL" "$out/$name.log" | head -20 || true; status=1
  fi
}
run passphrase_check "$out/passphrase_check" "$build/libkeybay-passphrase.so"
run virtual_authenticator_check "$out/virtual_authenticator_check"
exit $status
