#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian packages, built and used as a user would: builds them from a copy of this tree with
# `dpkg-buildpackage -b -uc -us -d`, runs lintian (no error allowed), makes a throwaway root
# (debootstrap --variant=minbase of this machine's release), installs the .debs there with apt
# (their dependencies and recommendations from the same archive as this machine's), and inside
# it, as an ordinary user with no LD_LIBRARY_PATH and no KEYBAY_PLUGIN_PATH:
#   - keybay-methods init, set, get on a file-root store in that user's XDG directories;
#   - keybay-methods plugins lists exactly the first-party plugins (Plugins/), from /usr/lib/keybay/plugins;
#   - the installed files are stripped (no .debug_info, no .symtab);
#   - a C host built with `cc app.c $(pkg-config --cflags --libs keybay)` runs, reads what the
#     CLI wrote, sets and gets, loads its plugin from /usr/lib/keybay/plugins (the CLI's
#     directory), and ldd shows nothing under /opt/swift and no missing library;
#   - the python3-keybay package reads the same store.
# Every step fails loudly (set -e, and each check exits non-zero). Ends with "deb-check: ok".
# Long (a release build, a root from the archive: about 10 minutes); scripts/test.sh runs it with
# KEYBAY_DEB=1. KEYBAY_DEB_KEEP=1 keeps the work directory (the .debs, lintian.txt, the root).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
[ "$(id -u)" -eq 0 ] || { echo "deb-check: needs root (debootstrap, chroot)" >&2; exit 1; }

say() { echo "deb-check: $*"; }
fail() { echo "deb-check: FAILED: $*" >&2; exit 1; }

# What building and checking the packages needs (the build dependencies are scripts/setup.sh's).
scripts/setup.sh
tools=(dpkg-dev debhelper dh-python lintian debootstrap)
missing=()
for p in "${tools[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/keybay-deb.XXXXXX")
root=$work/root
cleanup() {
  # Nothing is removed while something is still mounted in the root.
  if mountpoint -q "$root/proc" 2>/dev/null; then umount "$root/proc" || { echo "deb-check: $root/proc still mounted; $work left" >&2; return; }; fi
  if [ "${KEYBAY_DEB_KEEP:-0}" = 1 ]; then echo "deb-check: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# 1. The packages, from a copy of the tree (tracked and new files, not .build/): the build starts
# clean, and dpkg-buildpackage writes the .debs into the copy's parent, $work.
say "building the packages in $work/src"
mkdir "$work/src"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$work/src"
(cd "$work/src" && dpkg-buildpackage -b -uc -us -d) > "$work/build.log" 2>&1 \
  || { tail -40 "$work/build.log"; fail "dpkg-buildpackage (log: $work/build.log)"; }
changes=$(ls "$work"/keybay_*.changes)
packages=(keybay-methods libkeybay1 libkeybay-dev keybay-plugins python3-keybay)
debs=()
for p in "${packages[@]}"; do
  deb=$(ls "$work/${p}"_*.deb 2>/dev/null) || fail "no $p .deb built"
  debs+=("$deb")
  say "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"
done

# 2. lintian on the .changes (every .deb it lists): no error; the rest is reported.
lintian --fail-on error --display-info --tag-display-limit 0 "$changes" > "$work/lintian.txt" 2>&1 \
  || { cat "$work/lintian.txt"; fail "lintian reports errors"; }
grep -q '^E: ' "$work/lintian.txt" && { cat "$work/lintian.txt"; fail "lintian reports errors"; }
say "lintian: $(grep -c '^E: ' "$work/lintian.txt" || true) errors, $(grep -c '^W: ' "$work/lintian.txt" || true) warnings, $(grep -c '^I: ' "$work/lintian.txt" || true) info"
grep '^W: ' "$work/lintian.txt" || true

# 3. A clean root of this machine's release, from the archive this machine's apt uses.
. /etc/os-release
suite=$VERSION_CODENAME
mirror=$(apt-get indextargets --format '$(REPO_URI)' "Release: $suite" "Target-Of: deb" | head -1)
[ -n "$mirror" ] || fail "no apt source for $suite on this machine"
say "debootstrap --variant=minbase $suite"
debootstrap --variant=minbase "$suite" "$root" "$mirror" > "$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log"; fail "debootstrap (log: $work/debootstrap.log)"; }
rm -f "$root"/etc/apt/sources.list "$root"/etc/apt/sources.list.d/*
cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/" 2>/dev/null || true
[ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
inside() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
[ ! -e "$root/opt/swift" ] || fail "the root has /opt/swift"

# 4. The .debs with their dependencies (and recommendations) from the archive, and a compiler.
mkdir "$root/debs"
cp "${debs[@]}" "$root/debs/"
say "installing ${packages[*]} in the root"
inside apt-get update -qq > "$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get update in the root"; }
inside apt-get install -y -q gcc libc6-dev pkg-config $(cd "$root" && printf '/debs/%s ' $(ls debs)) >> "$work/apt.log" 2>&1 \
  || { tail -30 "$work/apt.log"; fail "apt-get install of the .debs in the root"; }
for p in "${packages[@]}" libsecret-1-0 libfido2-1 libqrencode4 libtss2-esys-3.0.2-0 libtss2-tcti-device0 libp11-kit0; do
  inside dpkg-query -W -f='${Status}\n' "$p" | grep -q "install ok installed" || fail "$p is not installed in the root"
done
inside useradd -m -s /bin/sh keybayuser

# 5. Inside the root, as that user. The plugins the tree has, for the CLI's list.
first_party=$(cd Plugins && for d in */; do [ "$d" = Support/ ] || printf '%s ' "${d%/}"; done)
cat > "$root/home/keybayuser/app.c" <<'EOF'
/* A host of the C API: reads what the CLI wrote, sets and gets, names the plugin file it loaded. */
#include <keybay/keybay.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    keybay_open_options options = {sizeof options, "org.keybay.debcheck", NULL, NULL, NULL, 1};
    keybay_error *err = NULL;
    keybay_store *store = keybay_open(&options, NULL, &err);
    if (!store) { fprintf(stderr, "open: %s\n", err ? keybay_error_message(err) : "?"); return 1; }
    uint8_t *value; size_t length;
    if (keybay_get(store, "api/token", &value, &length, &err) != 0) { fprintf(stderr, "get: %s\n", keybay_error_message(err)); return 1; }
    int same = length == 6 && memcmp(value, "s3cr3t", 6) == 0;
    keybay_free_value(value, length);
    if (!same) { fprintf(stderr, "get: not the CLI's value\n"); return 1; }
    if (keybay_set(store, "from/c", (const uint8_t *)"hello", 5, &err) != 0) { fprintf(stderr, "set: %s\n", keybay_error_message(err)); return 1; }
    if (keybay_get(store, "from/c", &value, &length, &err) != 0) { fprintf(stderr, "get: %s\n", keybay_error_message(err)); return 1; }
    same = length == 5 && memcmp(value, "hello", 5) == 0;
    keybay_free_value(value, length);
    if (!same) { fprintf(stderr, "get: not the value set\n"); return 1; }
    /* Which file-root plugin the library loaded: its mapping in this process. */
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    while (maps && fgets(line, sizeof line, maps)) {
        char *path = strchr(line, '/');
        if (path && strstr(path, "libkeybay-file-root.so")) { printf("plugin %s", path); break; }
    }
    if (maps) fclose(maps);
    keybay_close(store);
    printf("c-host ok %s\n", keybay_version());
    return 0;
}
EOF
cat > "$root/home/keybayuser/check.sh" <<EOF
set -eu
first_party="$first_party"
EOF
cat >> "$root/home/keybayuser/check.sh" <<'EOF'
export HOME=/home/keybayuser XDG_DATA_HOME=/home/keybayuser/.local/share XDG_STATE_HOME=/home/keybayuser/.local/state
cd "$HOME"
fail() { echo "deb-check (root): FAILED: $*" >&2; exit 1; }
app=org.keybay.debcheck
[ -z "${LD_LIBRARY_PATH:-}" ] && [ -z "${KEYBAY_PLUGIN_PATH:-}" ] || fail "LD_LIBRARY_PATH or KEYBAY_PLUGIN_PATH is set"
[ "$(command -v keybay-methods)" = /usr/bin/keybay-methods ] || fail "keybay-methods is not /usr/bin/keybay-methods"
keybay-methods --app $app init
keybay-methods --app $app set api/token s3cr3t
[ "$(keybay-methods --app $app get api/token)" = s3cr3t ] || fail "get did not give the value set"
[ -f "$XDG_STATE_HOME/keybay/$app/file-root.key" ] || fail "no file-root key in XDG_STATE_HOME"
echo "cli: init, set, get ok"
keybay-methods plugins --json > plugins.json
python3 - "$first_party" <<'PY'
import json, sys
listed = json.load(open("plugins.json"))
ids = sorted(p["id"] for p in listed)
want = sorted(sys.argv[1].split())
assert ids == want, f"plugins lists {ids}, the first-party plugins are {want}"
paths = {p["path"] for p in listed}
assert all(p.startswith("/usr/lib/keybay/plugins/libkeybay-") for p in paths), paths
print("cli: plugins lists", " ".join(ids), "from /usr/lib/keybay/plugins")
PY
cc app.c $(pkg-config --cflags --libs keybay) -o app
echo "pkg-config: $(pkg-config --cflags --libs keybay)"
ldd ./app > ldd.txt
cat ldd.txt
# Merged /usr: the linker's cache may name it /lib/libkeybay.so.1, the same file.
loaded=$(sed -n 's/^[[:space:]]*libkeybay\.so\.1 => \([^ ]*\) .*/\1/p' ldd.txt)
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = /usr/lib/libkeybay.so.1 ] || fail "the host does not load /usr/lib/libkeybay.so.1 (ldd: ${loaded:-none})"
! grep -q '/opt/swift' ldd.txt || fail "ldd shows a library under /opt/swift"
! grep -q 'not found' ldd.txt || fail "ldd: a library is not found"
! ldd /usr/lib/libkeybay.so.1 | grep -q -e /opt/swift -e 'not found' || fail "libkeybay.so.1 needs /opt/swift or a missing library"
./app > app.txt
cat app.txt
grep -q '^plugin /usr/lib/keybay/plugins/libkeybay-file-root.so$' app.txt || fail "the library did not load the CLI's file-root plugin"
grep -q '^c-host ok ' app.txt || fail "the C host"
[ "$(keybay-methods --app $app get from/c)" = hello ] || fail "the CLI does not read what the C host set"
python3 -c '
import keybay
with keybay.open("org.keybay.debcheck") as store:
    assert store.get("api/token") == b"s3cr3t" and store["from/c"] == b"hello", "python: wrong values"
    store.set("from/python", "py")
print("python: keybay", keybay.library_version(), "from", keybay.__file__)
'
[ "$(keybay-methods --app $app get from/python)" = py ] || fail "the CLI does not read what Python set"
echo "root: ok"
EOF
chown -R --reference="$root/home/keybayuser" "$root/home/keybayuser"

chroot --userspec=keybayuser:keybayuser "$root" /usr/bin/env -i PATH=/usr/bin:/bin LANG=C.UTF-8 /bin/sh /home/keybayuser/check.sh \
  || fail "the checks inside the root"

# The installed ELF files are stripped: the CLI, the credential helpers, the library and each first-party plugin.
elf=(usr/bin/keybay-methods usr/bin/git-credential-keybay usr/bin/docker-credential-keybay usr/lib/libkeybay.so.1)
for id in $first_party; do elf+=("usr/lib/keybay/plugins/libkeybay-$id.so"); done
for f in "${elf[@]}"; do
  readelf -S -W "$root/$f" > "$work/sections.txt" || fail "/$f: not installed, or not an ELF file"
  if grep -q -E ' \.(debug_info|symtab) ' "$work/sections.txt"; then fail "/$f is not stripped"; fi
done
say "installed ELF files stripped (no .debug_info, no .symtab): ${#elf[@]} files"
say ok
