#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libFuzzer runs over the strict decoders: the store file, the suite-2 methods package, the
# passphrase, fido2 and pkcs11 plugins' parameters (through the real loader), the file-root plugin's
# root file (through its own entry point), the tpm2 plugin's root file (its decoder compiled
# into the target: through the entry point every input would need a TPM) and the credential
# helpers' strict JSON reader and record decoder (integrations/common, compiled in).
#
#   scripts/fuzz.sh                 # 15 s per target (what CI runs, through scripts/test.sh)
#   scripts/fuzz.sh 600             # 10 minutes per target
#   scripts/fuzz.sh 60 store        # one target
#
# The C plugins are built for fuzzing with -fsanitize=fuzzer-no-link,address: libFuzzer then sees
# their coverage and comparisons (not only the Swift host's), and AddressSanitizer catches an
# over-read inside them even where it would not fault.
#
# Seeds are committed under Fuzz/<target>/corpus; new inputs go to a scratch corpus, crashes to
# a directory of this run's own under .build/fuzz-artifacts/. Prints the executions, the coverage
# libFuzzer reached and this run's crash artifacts per target; exits 1 on a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${KEYBAY_FUZZ_SECONDS:-15}}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(store methods-package passphrase-params fido2-params pkcs11-params file-root tpm2-file integrations)

export KEYBAY_FUZZ=1
# The fuzzers are built apart from the ordinary build (other flags, another manifest).
for t in "${targets[@]}"; do
  case "$t" in
    file-root) # C: the harness dlopens the plugin itself.
      mkdir -p .build/fuzz
      clang -std=c11 -g -O1 -Wall -Wextra -Werror -fsanitize=fuzzer,address -fuse-ld=lld -I Sources/CKeybayPlugin/include \
        Fuzz/file-root/fuzz_root_file.c -o .build/fuzz/keybay-fuzz-file-root -lsodium -ldl ;;
    tpm2-file) # C: the plugin's source is compiled in; tss2 is opened with dlopen, as the plugin does.
      mkdir -p .build/fuzz
      clang -std=c11 -g -O1 -Wall -Wextra -Werror -fsanitize=fuzzer,address -fuse-ld=lld -I Sources/CKeybayPlugin/include \
        -I Plugins/Support/common/include -I Plugins/Support/root-files/include -I Plugins/Support/tpm2/include \
        -I Plugins/Support/recovery-key/include Fuzz/tpm2-file/fuzz_tpm2_file.c Plugins/Support/common/*.c \
        Plugins/Support/root-files/*.c Plugins/Support/tpm2/*.c Plugins/Support/recovery-key/*.c -o .build/fuzz/keybay-fuzz-tpm2-file -lsodium -ldl -lpthread ;;
    integrations) # C: the helpers' decoders compiled in.
      mkdir -p .build/fuzz
      clang -std=c11 -g -O1 -Wall -Wextra -Werror -D_DEFAULT_SOURCE -fsanitize=fuzzer,address -fuse-ld=lld -I integrations/common \
        Fuzz/integrations/fuzz_integrations.c integrations/common/strict_json.c integrations/common/integration_record.c \
        -o .build/fuzz/keybay-fuzz-integrations -lsodium ;;
    *) swift build -c release --build-path .build/fuzz --product "keybay-fuzz-$t" \
         --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address >/dev/null ;;
  esac
done
for product in keybay-passphrase keybay-fido2 keybay-pkcs11 keybay-file-root; do
  swift build -c release --build-path .build/fuzz-plugins --product "$product" -Xcc -fsanitize=fuzzer-no-link,address >/dev/null
done
export KEYBAY_FUZZ_PLUGIN_DIR="$PWD/.build/fuzz-plugins/release"
# Sanity: a plugin without the instrumentation would leave libFuzzer blind inside it.
for plugin in passphrase fido2 pkcs11 file-root; do
  nm -D "$KEYBAY_FUZZ_PLUGIN_DIR/libkeybay-$plugin.so" | grep -q ' U __asan_' \
    || { echo "fuzz: libkeybay-$plugin.so is not built with AddressSanitizer" >&2; exit 1; }
done

# One directory per run, so earlier runs' artifacts are not counted as this run's crashes.
artifacts=.build/fuzz-artifacts/$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$artifacts"
status=0
for t in "${targets[@]}"; do
  scratch=$(mktemp -d)
  log=$(mktemp)
  binary=.build/fuzz/release/keybay-fuzz-$t
  case "$t" in file-root|tpm2-file|integrations) binary=.build/fuzz/keybay-fuzz-$t ;; esac
  set +e
  "$binary" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$t-" "$scratch" "Fuzz/$t/corpus" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -oE '(DONE|INITED) +cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo '?')
  crashes=$(ls "$artifacts" 2>/dev/null | grep -c "^$t-" || true)
  echo "fuzz $t: ${seconds}s, $execs executions, coverage $cov, exit $rc, $crashes crash artifacts"
  [ "$crashes" = 0 ] || echo "  in $artifacts/"
  if [ "$rc" -ne 0 ]; then tail -30 "$log"; status=1; fi
  rm -rf "$scratch" "$log"
done
rmdir "$artifacts" 2>/dev/null || true # only when this run left nothing
exit $status
