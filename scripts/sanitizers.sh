#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and ThreadSanitizer (separate build directories,
# so the ordinary build is untouched). Slow: several minutes each on 2 cores.
#   scripts/sanitizers.sh            # both
#   scripts/sanitizers.sh address    # one
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
# Toolchain-internal leaks only (see the file); anything in Keybay's code still fails.
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
[ ${#kinds[@]} -gt 0 ] || kinds=(address thread)
status=0
for k in "${kinds[@]}"; do
  echo "== swift test --sanitize=$k"
  swift test --sanitize="$k" --build-path ".build/sanitize-$k" > ".build/sanitize-$k.log" 2>&1 || true
  grep -E "^(✔|✘) Test run|ERROR: [A-Za-z]*Sanitizer|WARNING: ThreadSanitizer|SUMMARY: [A-Za-z]*Sanitizer" ".build/sanitize-$k.log" || true
  if grep -q "✔ Test run" ".build/sanitize-$k.log" && ! grep -qE "ERROR: [A-Za-z]*Sanitizer|WARNING: ThreadSanitizer" ".build/sanitize-$k.log"; then
    echo "sanitize=$k: clean"
  else
    echo "sanitize=$k: FAILED (full log: .build/sanitize-$k.log)"; status=1
  fi
done
exit $status
