#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages Keybay needs, only those that are missing.
# Needs Swift 6.3 on PATH already (https://www.swift.org/install/linux/).
set -euo pipefail

packages=(libsodium-dev libargon2-dev libfido2-dev libssl-dev pkg-config python3 make gcc
          python3-venv python3-pip  # bindings/python's tests: pytest from pip, and `pip install` into a fresh venv
          git           # integrations/tests: git-credential-keybay through real git
          groff-base  # groff-base: /usr/bin/groff, for the man page check in InstallTests
          swtpm swtpm-tools tpm2-tools libtss2-dev  # a TPM 2.0 emulator and tpm2-tss for the tpm2 root and the tpm2-pin method
          libqrencode4  # the recovery plugin draws its key as a QR code with it (opened at run time)
          libzbar0      # a QR decoder: RecoveryTests read that drawing back
          gnome-keyring dbus libsecret-1-dev libsecret-tools  # the secret-service root and its tests (a private bus + keyring)
          argon2        # the reference CLI Tests/plugin-harness/passphrase_check.c and MutationGuardTests compare with
          softhsm2 opensc libp11-kit-dev p11-kit  # the pkcs11 method (p11-kit's headers; opens libp11-kit0) and its tests (SoftHSM2 tokens, pkcs11-tool)
          pinentry-tty  # PinentryTests: Debian's pinentry-tty asks on a pseudo-terminal the test makes
          dpkg-dev     # PackagingTests: debian/rules' install-flags (dpkg's architecture.mk); readelf (binutils) for InstallTests
          strace       # MutationGuardTests (the order of fsync and rename), FaultInjectionTests (strace -e inject)
          xdg-desktop-portal bubblewrap  # the portal root's tests: the Secret portal on a private bus, bwrap sandboxes
          openssl systemd  # Tpm2SignedPolicyTests sign PCR policies with openssl; Tpm2SystemdMeasureTests with /usr/lib/systemd/systemd-measure
          duplicity borgbackup tar attr e2fsprogs  # BackupExclusionTests: real backups; getfattr/setfattr, lsattr/chattr
          age)          # exports: AgeInteropTests and the CLI tests check them against age and age-keygen
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# pytest for bindings/python/tests and integrations/tests, and keyring (its BackendBasicTests and
# SecretService backend, for the keyring backend's tests), into whichever python3 is first on PATH
# (PEP 668 systems: --user).
for module in pytest keyring; do
  if ! python3 -c "import $module" 2>/dev/null; then
    echo "setup: installing $module (pip)"
    python3 -m pip install --quiet "$module" 2>/dev/null \
      || python3 -m pip install --quiet --user --break-system-packages "$module"
  fi
done

command -v swift >/dev/null || { echo "setup: swift is not on PATH; install Swift 6.3 first" >&2; exit 1; }
