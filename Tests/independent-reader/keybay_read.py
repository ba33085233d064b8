#!/usr/bin/env python3
"""Independent reader for the Keybay V2 suite-1 store format (platform-only policy, file-root).

Written from docs/format.md alone (no reference to the Swift implementation). Section
numbers in comments refer to that document.

    keybay_read.py --app APP --root ROOTFILE --store STOREFILE [--key KEY]
    keybay_read.py --self-test

Exit codes: 0 ok, 1 spec violation / I/O failure, 2 usage error, 3 --key not in the store.
"""
import argparse, ctypes, ctypes.util, hashlib, hmac, json, os, re, struct, sys

# ---------------------------------------------------------------- limits (§3, §5, §5.4)
ROOT_FILE_LEN = 38
MAX_PROVIDER_STATE = 64
MAX_SEALED_PACKAGE = 4096
MAX_COUNT = 4096
MAX_KEY = 120
MAX_VALUE = 1 << 20
MAX_SEALED_MANIFEST = 4 + MAX_COUNT * (4 + MAX_KEY + 4 + 32) + 40
MAX_BOOTSTRAP = 4 + 2 + 4 + MAX_PROVIDER_STATE + 4
# §5: "a file is at most 16 MiB plus the bootstrap and the sealed package" (largest possible).
MAX_STORE_FILE = 16 * 1024 * 1024 + MAX_BOOTSTRAP + MAX_SEALED_PACKAGE
OVERHEAD = 24 + 16  # sealed = nonce(24) | ciphertext | tag(16)

APP_RE = re.compile(rb"[A-Za-z0-9][A-Za-z0-9._-]{0,119}\Z")
KEY_RE = re.compile(rb"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*\Z")


class FormatError(Exception):
    """Any violation of the spec; fatal for the whole file (§6)."""


# ---------------------------------------------------------------- primitives (§1)
def u16(n): return struct.pack(">H", n)
def u32(n): return struct.pack(">I", n)
def u64(n): return struct.pack(">Q", n)
def LP(x): return u32(len(x)) + x
def sha256(b): return hashlib.sha256(b).digest()


def transcript(label: str, *fields: bytes) -> bytes:
    """label | 0x00 | LP(field1) | LP(field2) | ..."""
    return label.encode("ascii") + b"\x00" + b"".join(LP(f) for f in fields)


def hkdf(ikm: bytes, salt: bytes, info: bytes, length: int = 32) -> bytes:
    """HKDF-SHA256, RFC 5869: extract then expand."""
    prk = hmac.new(salt if salt else b"\x00" * 32, ikm, hashlib.sha256).digest()
    okm, t, i = b"", b"", 1
    while len(okm) < length:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        okm, i = okm + t, i + 1
    return okm[:length]


def _sodium():
    lib = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
    if lib.sodium_init() < 0:
        raise OSError("sodium_init failed")
    return lib


_SODIUM = None


def _aead(fn: str, key: bytes, nonce: bytes, data: bytes, aad: bytes, out_len: int):
    """Call crypto_aead_xchacha20poly1305_ietf_{encrypt,decrypt}; None on failure."""
    global _SODIUM
    _SODIUM = _SODIUM or _sodium()
    assert len(key) == 32 and len(nonce) == 24
    out, got = ctypes.create_string_buffer(max(out_len, 1)), ctypes.c_ulonglong(0)
    ull = ctypes.c_ulonglong
    if fn == "decrypt":  # (m, mlen_p, nsec, c, clen, ad, adlen, npub, k)
        rc = _SODIUM.crypto_aead_xchacha20poly1305_ietf_decrypt(
            out, ctypes.byref(got), None, data, ull(len(data)), aad, ull(len(aad)), nonce, key)
    else:                # (c, clen_p, m, mlen, ad, adlen, nsec, npub, k)
        rc = _SODIUM.crypto_aead_xchacha20poly1305_ietf_encrypt(
            out, ctypes.byref(got), data, ull(len(data)), aad, ull(len(aad)), None, nonce, key)
    if rc != 0 or got.value != out_len:
        return None
    return out.raw[:out_len]


def open_sealed(key: bytes, sealed: bytes, aad: bytes, what: str) -> bytes:
    """sealed = nonce(24) | AEAD(key, plaintext, aad) (ciphertext | tag(16))."""
    if len(sealed) < OVERHEAD:
        raise FormatError(f"{what}: sealed object shorter than 40 bytes")
    pt = _aead("decrypt", key, sealed[:24], sealed[24:], aad, len(sealed) - OVERHEAD)
    if pt is None:
        raise FormatError(f"{what}: AEAD authentication failed")
    return pt


def seal_with_nonce(key: bytes, nonce: bytes, pt: bytes, aad: bytes) -> bytes:
    """Deterministic seal, used only by --self-test to reproduce the §9 vectors."""
    return nonce + _aead("encrypt", key, nonce, pt, aad, len(pt) + 16)


class Reader:
    """Strict cursor: every read is bounds-checked; finish() rejects trailing bytes."""
    def __init__(self, data: bytes, what: str): self.d, self.p, self.what = data, 0, what
    def take(self, n: int) -> bytes:
        if n > len(self.d) - self.p:
            raise FormatError(f"{self.what}: truncated (need {n} bytes at offset {self.p})")
        b, self.p = self.d[self.p:self.p + n], self.p + n
        return b
    def u8(self): return self.take(1)[0]
    def u16(self): return struct.unpack(">H", self.take(2))[0]
    def u32(self): return struct.unpack(">I", self.take(4))[0]
    def u64(self): return struct.unpack(">Q", self.take(8))[0]
    def finish(self):
        if self.p != len(self.d):
            raise FormatError(f"{self.what}: {len(self.d) - self.p} trailing bytes")


# ---------------------------------------------------------------- format pieces (§3–§5)
def parse_root_file(data: bytes) -> bytes:
    """§3: rootFile = "KBFR" | version:u16 (= 1) | root(32), exactly 38 bytes."""
    if len(data) != ROOT_FILE_LEN:
        raise FormatError(f"root file: length {len(data)}, expected 38")
    r = Reader(data, "root file")
    if r.take(4) != b"KBFR":
        raise FormatError("root file: bad magic")
    if (v := r.u16()) != 1:
        raise FormatError(f"root file: unsupported version {v}")
    root = r.take(32)
    r.finish()
    return root


def storage_domain(app: str) -> bytes:
    """§4: SHA-256("keybay:v2:storage-domain" | 0x00 | LP(identity) | LP([assurance]) | LP(profile) | LP(location))."""
    a = app.encode("utf-8")
    return sha256(transcript("keybay:v2:storage-domain", a, b"\x01", b"file-root",
                             b"keybay/" + a + b"/"))


def provider_state(domain: bytes, root: bytes) -> bytes:
    """§4: plain concatenation after the 0x00, no length prefixes."""
    return sha256(b"keybay:v2:s1:provider-state:file-root\x00" + domain + root)


def bootstrap_core(ps: bytes) -> bytes:
    return b"KBV2" + u16(1) + LP(ps)


def package_aad(domain, core): return transcript("keybay:v2:s1:aad:platform-package", domain, core)
def manifest_aad(domain, bootstrap, sealed_pkg):
    return transcript("keybay:v2:s1:aad:manifest", domain, bootstrap, sealed_pkg)
def record_aad(store_id, epoch, key):
    return transcript("keybay:v2:s1:aad:record-frame", store_id, u64(epoch), b"\x01", key)


def derive_keys(kstore: bytes, store_id: bytes):
    """§5.2: (Kmanifest, Kframe)."""
    return (hkdf(kstore, store_id, b"keybay:v2:s1:key:manifest"),
            hkdf(kstore, store_id, b"keybay:v2:s1:key:record-frame"))


def decode_package(pt: bytes):
    """§5.1: storeId(16) | epoch:u64 | policy:u8 (= 0) | Kstore(32), exactly 57 bytes."""
    if len(pt) > 24 and pt[24] != 0:  # report a known-but-refused policy (e.g. 1) by name
        raise FormatError(f"key package: unsupported policy {pt[24]}")
    if len(pt) != 57:
        raise FormatError(f"key package: length {len(pt)}, expected 57")
    r = Reader(pt, "key package")
    store_id, epoch, _policy, kstore = r.take(16), r.u64(), r.u8(), r.take(32)
    r.finish()
    if not 1 <= epoch <= (1 << 63) - 1:
        raise FormatError(f"key package: epoch {epoch} out of range")
    return store_id, epoch, kstore


def decode_manifest(pt: bytes):
    """§5.4: count:u32 | (LP(key) | frameLength:u32 | digest(32)) * count -> [(key, len, digest)]."""
    r = Reader(pt, "manifest")
    count = r.u32()
    if count > MAX_COUNT:
        raise FormatError(f"manifest: count {count} > {MAX_COUNT}")
    entries, prev = [], None
    for _ in range(count):
        klen = r.u32()
        if not 1 <= klen <= MAX_KEY:
            raise FormatError(f"manifest: key length {klen} out of range 1..120")
        key = r.take(klen)
        if not KEY_RE.match(key):
            raise FormatError(f"manifest: malformed key {key!r}")
        if prev is not None and not prev < key:
            raise FormatError(f"manifest: keys not unique and strictly ascending at {key!r}")
        flen = r.u32()
        if not OVERHEAD <= flen <= MAX_VALUE + OVERHEAD:
            raise FormatError(f"manifest: frame length {flen} out of range for {key!r}")
        entries.append((key, flen, r.take(32)))
        prev = key
    r.finish()
    return entries


def split_frames(region: bytes, entries):
    """§5.4: frames are back to back in manifest order and cover the region exactly."""
    if sum(f for _, f, _ in entries) != len(region):
        raise FormatError("frame region: frame lengths do not cover the region exactly")
    frames, off = {}, 0
    for key, flen, digest in entries:
        frame = region[off:off + flen]
        off += flen
        if not hmac.compare_digest(sha256(frame), digest):
            raise FormatError(f"frame {key!r}: SHA-256 digest mismatch")
        frames[key] = frame
    return frames


# ---------------------------------------------------------------- opening a store (§6)
def read_limited(path: str, limit: int, what: str) -> bytes:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise FormatError(f"{what}: file size {size} exceeds limit {limit}")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FormatError(f"{what}: file exceeds limit {limit}")
    return data


def open_store(app: str, root_path: str, store_path: str):
    # 1. read both files, refusing oversized ones before reading.
    root = parse_root_file(read_limited(root_path, ROOT_FILE_LEN, "root file"))
    data = read_limited(store_path, MAX_STORE_FILE, "store file")
    # 2. bootstrap and layout (§5, in the listed order).
    r = Reader(data, "store bootstrap")
    if r.take(4) != b"KBV2":
        raise FormatError("store: bad magic")
    if (suite := r.u16()) != 1:
        raise FormatError(f"store: unsupported suite {suite}")
    if (ps_len := r.u32()) > MAX_PROVIDER_STATE:
        raise FormatError(f"store: provider state length {ps_len} > 64")
    ps = r.take(ps_len)
    core_end = r.p
    pkg_len = r.u32()
    if not OVERHEAD < pkg_len <= MAX_SEALED_PACKAGE:
        raise FormatError(f"store: sealed package length {pkg_len} out of range")
    core, bootstrap = data[:core_end], data[:r.p]
    sealed_pkg = r.take(pkg_len)
    pkg_end = r.p
    if len(data) > 16 * 1024 * 1024 + pkg_end:  # §5: at most 16 MiB + bootstrap + package
        raise FormatError(f"store: file length {len(data)} exceeds 16 MiB + bootstrap + package")
    if len(data) - pkg_end < 4:
        raise FormatError("store: truncated (no sealed manifest length)")
    man_len = struct.unpack(">I", data[-4:])[0]
    if not OVERHEAD < man_len <= MAX_SEALED_MANIFEST:
        raise FormatError(f"store: sealed manifest length {man_len} out of range")
    if man_len > len(data) - 4 - pkg_end:
        raise FormatError("store: sealed manifest does not fit after the sealed package")
    man_start = len(data) - 4 - man_len
    region, sealed_man = data[pkg_end:man_start], data[man_start:len(data) - 4]
    # 3. storage domain and provider state, constant-time compare BEFORE any decryption.
    domain = storage_domain(app)
    if not hmac.compare_digest(provider_state(domain, root), ps):
        raise FormatError("provider state mismatch: platform key invalidated "
                          "(root does not belong to this store)")
    # 4. open and decode the key package.
    store_id, epoch, kstore = decode_package(
        open_sealed(root, sealed_pkg, package_aad(domain, core), "key package"))
    # 5. derive keys (Kstore stays provisional until the manifest authenticates).
    kmanifest, kframe = derive_keys(kstore, store_id)
    # 6. open and decode the manifest, check frame coverage and digests.
    entries = decode_manifest(open_sealed(
        kmanifest, sealed_man, manifest_aad(domain, bootstrap, sealed_pkg), "manifest"))
    frames = split_frames(region, entries)
    # 7. per-record frame opening.
    def open_record(key: bytes) -> bytes:
        return open_sealed(kframe, frames[key], record_aad(store_id, epoch, key), f"frame {key!r}")
    return [k for k, _, _ in entries], open_record


# ---------------------------------------------------------------- self-test (RFC 5869, §9)
def self_test():
    H = bytes.fromhex
    def check(name, got, want):
        if got != want:
            raise FormatError(f"self-test: {name} mismatch: {got.hex() if got else got}")
    # RFC 5869 test case 1.
    check("HKDF RFC 5869 TC1", hkdf(b"\x0b" * 22, H("000102030405060708090a0b0c"),
                                    H("f0f1f2f3f4f5f6f7f8f9"), 42),
          H("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
            "34007208d5b887185865"))
    # §9 inputs.
    domain, ps, sealed_pkg = bytes(range(0x00, 0x20)), H("deadbeef"), bytes(range(0xc0, 0xf0))
    store_id, kstore, epoch = bytes(range(0x10, 0x20)), bytes(range(0x20, 0x40)), 7
    key, value = b"service/token", b"correct horse"
    rec_nonce, man_nonce = bytes(range(0x80, 0x98)), bytes(range(0x98, 0xb0))
    core = bootstrap_core(ps)
    bootstrap = core + u32(len(sealed_pkg))
    check("bootstrapCore", core, H("4b425632000100000004deadbeef"))
    check("bootstrap", bootstrap, H("4b425632000100000004deadbeef00000030"))
    pkg = store_id + u64(epoch) + b"\x00" + kstore
    check("platformPackage", pkg, H("101112131415161718191a1b1c1d1e1f0000000000000007002021"
                                    "22232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"))
    sid, ep, ks = decode_package(pkg)
    check("decoded platformPackage", sid + u64(ep) + ks, store_id + u64(epoch) + kstore)
    kman, kfr = derive_keys(kstore, store_id)
    check("Kmanifest", kman, H("83c5dee4e2d4cc0b09b37cfdfd4e0702b8fe13bd82d6c4355c7334e984668b57"))
    check("Kframe", kfr, H("1a25a1542a2793d5669b1546c3fef779cf93c644b1fd393b20822beabb24da82"))
    frame = H("808182838485868788898a8b8c8d8e8f909192939495969718571f375e0b7e0a33002dfe15c519"
              "6b73ec3f46bf7f98c1084591a247")
    check("recordFrame decrypt", open_sealed(kfr, frame, record_aad(store_id, epoch, key), "v"), value)
    check("recordFrame seal", seal_with_nonce(kfr, rec_nonce, value, record_aad(store_id, epoch, key)), frame)
    check("SHA-256(recordFrame)", sha256(frame),
          H("44fb91337ee10da4e381d5e24b71fe764db458d86c8abf6f08f2fd75ef4fa1f8"))
    manifest = H("000000010000000d736572766963652f746f6b656e0000003544fb91337ee10da4e381d5e24b71"
                 "fe764db458d86c8abf6f08f2fd75ef4fa1f8")
    check("manifest encode", u32(1) + LP(key) + u32(len(frame)) + sha256(frame), manifest)
    sealed_man = H("98999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb46de0f83718cb7ce8560ffa7b4c"
                   "aae3e26504f69f8efedda358394a60f8235439473204738759d86900d8fa8ccf34b30bc9911d"
                   "337d872a8b10ebaf0216a877adc625d45bcbc5579d")
    maad = manifest_aad(domain, bootstrap, sealed_pkg)
    check("sealedManifest decrypt", open_sealed(kman, sealed_man, maad, "v"), manifest)
    check("sealedManifest seal", seal_with_nonce(kman, man_nonce, manifest, maad), sealed_man)
    entries = decode_manifest(manifest)
    check("manifest decode/frames", split_frames(frame, entries).get(key), frame)
    # Negative checks: tampering must fail authentication.
    try:
        open_sealed(kman, sealed_man, manifest_aad(domain, core, sealed_pkg), "v")
        raise FormatError("self-test: manifest opened with a wrong AAD")
    except FormatError as e:
        if "wrong AAD" in str(e):
            raise
    print("self-test ok")


# ---------------------------------------------------------------- command line
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Independent Keybay V2 suite-1 store reader")
    ap.add_argument("--app"); ap.add_argument("--root"); ap.add_argument("--store")
    ap.add_argument("--key"); ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)  # exits 2 on usage errors
    try:
        if args.self_test:
            self_test()
            return 0
        if not (args.app and args.root and args.store):
            ap.error("--app, --root and --store are required")
        if not APP_RE.match(args.app.encode("utf-8")):
            ap.error(f"invalid application id {args.app!r}")
        keys, open_record = open_store(args.app, args.root, args.store)
        if args.key is not None:
            k = args.key.encode("utf-8")
            if k not in keys:
                print(f"keybay_read: no record {args.key!r}", file=sys.stderr)
                return 3
            sys.stdout.buffer.write(open_record(k))
            sys.stdout.buffer.flush()
            return 0
        # Decrypt everything first: never emit partial output from a bad file.
        out = {k.decode("ascii"): open_record(k).hex() for k in keys}
        print(json.dumps(out))
        return 0
    except (FormatError, OSError) as e:
        print(f"keybay_read: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
