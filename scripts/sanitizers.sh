#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite under AddressSanitizer and ThreadSanitizer (separate build directories,
# so the ordinary build is untouched). Slow: several minutes each on 2 cores.
#   scripts/sanitizers.sh            # both
#   scripts/sanitizers.sh address    # one
#   scripts/sanitizers.sh capi       # the C API's host (Tests/capi/capi_check.c: four threads on
#                                    # one handle) under ThreadSanitizer, about a minute
# Every process the tests start (the CLI, the crash-kill writer) reports to files under
# .build/sanitize-<kind>-reports/ (log_path, passed on by Sandbox.environment), as does the
# test runner itself: any file there fails the run, whatever the tests said.
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
# Package.swift: no static Swift runtime, whose hidden symbols would hide the interceptors.
export KEYBAY_SANITIZE=1
[ ${#kinds[@]} -gt 0 ] || kinds=(address thread capi)
status=0
for k in "${kinds[@]}"; do
  if [ "$k" = capi ]; then
    # libkeybay built with ThreadSanitizer, and capi_check built with the toolchain's clang (the
    # same runtime version), which links the runtime into the executable for the library's use.
    echo "== capi_check under ThreadSanitizer"
    lib="$PWD/.build/sanitize-capi/debug" swiftlib=/opt/swift/usr/lib/swift/linux
    [ -d "$swiftlib" ] || swiftlib="$(dirname "$(dirname "$(command -v swift)")")/lib/swift/linux"
    swift build --sanitize=thread --product keybay --build-path .build/sanitize-capi >/dev/null
    env -u KEYBAY_SANITIZE swift build --product keybay-file-root >/dev/null  # its plugin, uninstrumented
    ln -sf libkeybay.so "$lib/libkeybay.so.1"
    "$(dirname "$(command -v swift)")/clang" -std=c11 -g -fsanitize=thread -I Sources/CKeybay/include Tests/capi/capi_check.c \
      -o "$lib/capi_check" -L "$lib" -Wl,-rpath,"$lib" -lkeybay -L "$swiftlib" -Wl,-rpath,"$swiftlib" -ldispatch -lBlocksRuntime -lpthread
    home=$(mktemp -d /tmp/keybay-capi-tsan-XXXXXX) top=$PWD
    if (cd "$home" && env HOME="$home" XDG_DATA_HOME="$home/data" XDG_STATE_HOME="$home/state" KEYBAY_APP_ID=org.example.tsan \
          KEYBAY_PLUGIN_PATH="$top/.build/debug" KEYBAY_PLUGIN_HOST="$top/.build/debug/keybay-plugin-host" \
          TSAN_OPTIONS="exitcode=66" "$lib/capi_check" > "$home/log" 2>&1) \
       && grep -q " checks, 0 failures" "$home/log" && ! grep -q "ThreadSanitizer" "$home/log"; then
      tail -1 "$home/log"; echo "sanitize=capi: clean"
    else
      grep -E "FAIL|WARNING: ThreadSanitizer|SUMMARY|checks" "$home/log" | head -12; echo "sanitize=capi: FAILED"; status=1
    fi
    rm -rf "$home"
    continue
  fi
  echo "== swift test --sanitize=$k"
  reports="$PWD/.build/sanitize-$k-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  # Toolchain-internal leaks only (see the file); anything in Keybay's code still fails.
  export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0:log_path=$reports/report"
  export ASAN_OPTIONS="log_path=$reports/report" TSAN_OPTIONS="log_path=$reports/report"
  # Plugins built without a sanitizer, for hosts built without one (the example host cannot
  # load sanitized plugins) and, under ThreadSanitizer, for every host: a TSan-built plugin
  # needs runtime symbols that only a TSan-built host exports (TestSupport.swift).
  plugins="$PWD/.build/sanitize-plugins"
  # Every plugin product in Package.swift (first-party and test plugins), so a new one is not missed.
  for product in $(grep -oE '\.library\(name: "keybay(test)?-[a-z0-9.-]+", type: \.dynamic' Package.swift | grep -oE 'keybay(test)?-[a-z0-9.-]+'); do
    env -u KEYBAY_SANITIZE -u ASAN_OPTIONS -u TSAN_OPTIONS -u LSAN_OPTIONS swift build --build-path "$plugins" --product "$product" >/dev/null
  done
  export KEYBAY_TEST_SANITIZER="$k" KEYBAY_TEST_HOST_PLUGIN_DIRECTORY="$plugins/debug"
  if [ "$k" = thread ]; then
    export KEYBAY_TEST_PLUGIN_DIRECTORY="$plugins/debug" KEYBAY_PLUGIN_PATH="$plugins/debug"
  else
    unset KEYBAY_TEST_PLUGIN_DIRECTORY KEYBAY_PLUGIN_PATH
  fi
  swift test --sanitize="$k" --build-path ".build/sanitize-$k" > ".build/sanitize-$k.log" 2>&1 || true
  grep -E "^(✔|✘) Test run|ERROR: [A-Za-z]*Sanitizer|WARNING: ThreadSanitizer|SUMMARY: [A-Za-z]*Sanitizer" ".build/sanitize-$k.log" || true
  reported=$(ls "$reports")
  for f in $reported; do
    echo "-- $reports/$f:"
    { grep -E "ERROR: [A-Za-z]*Sanitizer|WARNING: ThreadSanitizer|SUMMARY: [A-Za-z]*Sanitizer|^ +#[0-9] " "$reports/$f" || true; } | head -12 || true
  done
  if grep -q "✔ Test run" ".build/sanitize-$k.log" && [ -z "$reported" ] \
     && ! grep -qE "ERROR: [A-Za-z]*Sanitizer|WARNING: ThreadSanitizer" ".build/sanitize-$k.log"; then
    echo "sanitize=$k: clean"
  else
    echo "sanitize=$k: FAILED (full log: .build/sanitize-$k.log; reports: $(echo "$reported" | grep -c . || true) in $reports)"; status=1
  fi
done
exit $status
