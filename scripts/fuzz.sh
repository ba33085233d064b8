#!/usr/bin/env bash
# libFuzzer runs over the strict decoders: the store file, the suite-2 methods package and the
# passphrase plugin's parameters (through the real loader).
#
#   scripts/fuzz.sh                 # 15 s per target (what CI runs, through scripts/test.sh)
#   scripts/fuzz.sh 600             # 10 minutes per target
#   scripts/fuzz.sh 60 store        # one target
#
# Seeds are committed under Fuzz/<target>/corpus; new inputs go to a scratch corpus, crashes to
# a directory of this run's own under .build/fuzz-artifacts/. Prints the executions and this
# run's crash artifacts per target; exits 1 on a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${KEYBAY_FUZZ_SECONDS:-15}}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(store methods-package passphrase-params)

export KEYBAY_FUZZ=1
# The fuzzers are built apart from the ordinary build (other flags, another manifest).
for t in "${targets[@]}"; do
  swift build -c release --build-path .build/fuzz --product "keybay-fuzz-$t" \
    --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address >/dev/null
done
swift build -c release --build-path .build/fuzz-plugins --product keybay-passphrase >/dev/null
export KEYBAY_FUZZ_PLUGIN_DIR="$PWD/.build/fuzz-plugins/release"

# One directory per run, so earlier runs' artifacts are not counted as this run's crashes.
artifacts=.build/fuzz-artifacts/$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$artifacts"
status=0
for t in "${targets[@]}"; do
  scratch=$(mktemp -d)
  log=$(mktemp)
  set +e
  ".build/fuzz/release/keybay-fuzz-$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$t-" "$scratch" "Fuzz/$t/corpus" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  crashes=$(ls "$artifacts" 2>/dev/null | grep -c "^$t-" || true)
  echo "fuzz $t: ${seconds}s, $execs executions, exit $rc, $crashes crash artifacts"
  [ "$crashes" = 0 ] || echo "  in $artifacts/"
  if [ "$rc" -ne 0 ]; then tail -30 "$log"; status=1; fi
  rm -rf "$scratch" "$log"
done
rmdir "$artifacts" 2>/dev/null || true # only when this run left nothing
exit $status
