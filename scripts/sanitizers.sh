#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and ThreadSanitizer (separate build directories,
# so the ordinary build is untouched). Slow: several minutes each on 2 cores.
#   scripts/sanitizers.sh            # both
#   scripts/sanitizers.sh address    # one
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(address thread)
status=0
for k in "${kinds[@]}"; do
  echo "== swift test --sanitize=$k"
  if swift test --sanitize="$k" --build-path ".build/sanitize-$k" 2>&1 | tee ".build/sanitize-$k.log" | grep -E "^(✔|✘) Test run|Sanitizer|ERROR:"; then :; fi
  grep -q "✔ Test run" ".build/sanitize-$k.log" && ! grep -q "Sanitizer" ".build/sanitize-$k.log" || status=1
done
exit $status
