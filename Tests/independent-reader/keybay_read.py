#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Independent reader for the Keybay V2 store format, on the file-root, secret-service or portal root:
suite 1 (platform-only policy) and suite 2 (method-protected; the `passphrase` method only).

Written from docs/format.md alone (no reference to the Swift implementation). Section
numbers in comments refer to that document. HPKE (RFC 9180) and DeriveKeyPair are implemented
here from the RFC; only X25519, ChaCha20-Poly1305, XChaCha20-Poly1305 (libsodium) and
Argon2id (libargon2) come from C libraries, through ctypes.

    keybay_read.py --app APP (--root ROOTFILE | --root-secret FILE | --portal-secret FILE --portal-floor FILE)
                   --store STOREFILE [--key KEY] [--passphrase-file FILE] [--method METHOD-ID] [--json]

--root is a file-root root file (§3); --root-secret holds the secret of a secret-service
keyring item (§4.2: 32 or 40 bytes); --portal-secret holds the Secret portal's secret for APP
and --portal-floor is the portal root's floor file (§4.3). The store's provider state says which
root it needs (§4.1).
    keybay_read.py --self-test

Exit codes: 0 ok, 1 spec violation / I/O failure / wrong passphrase / store is protected,
2 usage error, 3 --key not in the store. With --json a failure of exit 1 is also one line on
standard output, {"error": {"code": CODE, "message": MESSAGE}}, CODE one of "wrong-secret",
"authentication-required" (protected, no secret given), "rolled-back" (§6.1), "format" (any other
violation of the spec) and "io", so that tests tell the causes apart without reading the message.
"""
import argparse, ctypes, ctypes.util, hashlib, hmac, json, os, re, struct, sys

# ---------------------------------------------------------------- limits (§3, §5, §5.4, §10.1, §11)
ROOT_FILE_LEN = {1: 38, 2: 46}  # per root-file version
MAX_PROVIDER_STATE = 64
MAX_SEALED_PACKAGE = {1: 4096, 2: 163_840}  # §5 step 3, per suite
MAX_COUNT = 4096
MAX_KEY = 120
MAX_VALUE = 1 << 20
MAX_SEALED_MANIFEST = 4 + MAX_COUNT * (4 + MAX_KEY + 4 + 32) + 40
MAX_BOOTSTRAP = 4 + 2 + 4 + MAX_PROVIDER_STATE + 4  # = 78
# §5: a reader refuses any file larger than 16 MiB + 163,840 before reading it (the bootstrap is
# inside the 16 MiB a writer keeps).
MAX_STORE_FILE = 16 * 1024 * 1024 + max(MAX_SEALED_PACKAGE.values())
OVERHEAD = 24 + 16  # sealed = nonce(24) | ciphertext | tag(16)
# §10.1 methods package
MAX_METHODS = 32
MAX_PLUGIN_ID = 64
MAX_LABEL = 64
MAX_PARAMS = 4096
MAX_GRANTS = 4096  # the grants field of a policy-2 envelope
MAX_GRANT_COUNT = 8
MAX_GRANT_PATH = 4095
# §11 passphrase parameters and passphrase
PASSPHRASE_PARAMS_LEN = 33
ARGON2_VERSION = 0x13
MAX_LANES, MAX_ITERATIONS, MAX_MEMORY_KIB = 8, 16, 2_097_152
MAX_PASSPHRASE = 1024

APP_RE = re.compile(rb"[A-Za-z0-9][A-Za-z0-9._-]{0,119}\Z")
KEY_RE = re.compile(rb"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*\Z")
PLUGIN_ID_RE = re.compile(rb"[a-z0-9][a-z0-9._-]{0,63}\Z")
METHOD_ID_RE = re.compile(r"[0-9A-Fa-f]{32}\Z")


class FormatError(Exception):
    """Any violation of the spec; fatal for the whole file (§6)."""


class WrongSecret(Exception):
    """§10.2: the recomputed public key differs from the stored one."""


class Protected(Exception):
    """A suite-2 store and no method secret was given."""


class RolledBack(FormatError):
    """§6.1: the key package is older than the root's floor."""


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


def sodium():
    global _SODIUM
    _SODIUM = _SODIUM or _sodium()
    return _SODIUM


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


def chacha20poly1305_ietf(fn: str, key: bytes, nonce: bytes, data: bytes, aad: bytes):
    """libsodium crypto_aead_chacha20poly1305_ietf_{encrypt,decrypt} (RFC 8439 AEAD, HPKE
    aead_id 0x0003: Nk = 32, Nn = 12, Nt = 16). None on failure."""
    lib = sodium()
    if len(key) != 32 or len(nonce) != 12:
        raise FormatError("ChaCha20-Poly1305: bad key or nonce length")
    out_len = len(data) - 16 if fn == "decrypt" else len(data) + 16
    if out_len < 0:
        return None
    out, got, ull = ctypes.create_string_buffer(max(out_len, 1)), ctypes.c_ulonglong(0), ctypes.c_ulonglong
    if fn == "decrypt":
        rc = lib.crypto_aead_chacha20poly1305_ietf_decrypt(
            out, ctypes.byref(got), None, data, ull(len(data)), aad, ull(len(aad)), nonce, key)
    else:
        rc = lib.crypto_aead_chacha20poly1305_ietf_encrypt(
            out, ctypes.byref(got), data, ull(len(data)), aad, ull(len(aad)), None, nonce, key)
    if rc != 0 or got.value != out_len:
        return None
    return out.raw[:out_len]


def x25519_base(sk: bytes) -> bytes:
    """X25519(sk, 9) via libsodium crypto_scalarmult_base (clamps sk as RFC 7748 requires)."""
    assert len(sk) == 32
    q = ctypes.create_string_buffer(32)
    if sodium().crypto_scalarmult_base(q, sk) != 0:
        raise FormatError("X25519: public key computation failed")
    return q.raw


def x25519(sk: bytes, pk: bytes) -> bytes:
    """X25519(sk, pk) via libsodium crypto_scalarmult, which refuses an all-zero result (the
    check RFC 9180 §7.1.4 requires for X25519)."""
    if len(sk) != 32 or len(pk) != 32:
        raise FormatError("X25519: bad key length")
    q = ctypes.create_string_buffer(32)
    if sodium().crypto_scalarmult(q, sk, pk) != 0:
        raise FormatError("X25519: shared secret is all zero (low-order point)")
    return q.raw


# ---------------------------------------------------------------- Argon2id (RFC 9106, §11)
_ARGON2 = None


def argon2id(password: bytes, salt: bytes, t: int, m_kib: int, p: int, length: int = 32) -> bytes:
    """libargon2 argon2id_hash_raw: version 0x13 (the library's default, pinned by --self-test),
    no secret, no associated data."""
    global _ARGON2
    if _ARGON2 is None:
        lib = ctypes.CDLL(ctypes.util.find_library("argon2") or "libargon2.so.1")
        f = lib.argon2id_hash_raw
        f.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                      ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
        f.restype = ctypes.c_int
        _ARGON2 = f
    out = ctypes.create_string_buffer(length)
    rc = _ARGON2(t, m_kib, p, password, len(password), salt, len(salt), out, length)
    if rc != 0:
        raise FormatError(f"Argon2id failed (libargon2 error {rc})")
    return out.raw


# ---------------------------------------------------------------- HPKE, RFC 9180 (§10.2, §10.3)
# Ciphersuite: DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305, base mode.
KEM_ID, KDF_ID, AEAD_ID = 0x0020, 0x0001, 0x0003
KEM_SUITE_ID = b"KEM" + u16(KEM_ID)                                  # §4.1 (KEM context)
HPKE_SUITE_ID = b"HPKE" + u16(KEM_ID) + u16(KDF_ID) + u16(AEAD_ID)   # §5.1
N_SECRET, N_SK, N_K, N_N = 32, 32, 32, 12
MODE_BASE = 0x00


def hkdf_extract(salt: bytes, ikm: bytes) -> bytes:
    return hmac.new(salt, ikm, hashlib.sha256).digest()  # an empty salt is HashLen zeros (RFC 5869)


def hkdf_expand(prk: bytes, info: bytes, length: int) -> bytes:
    okm, t, i = b"", b"", 1
    while len(okm) < length:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        okm, i = okm + t, i + 1
    return okm[:length]


def labeled_extract(suite_id: bytes, salt: bytes, label: bytes, ikm: bytes) -> bytes:
    return hkdf_extract(salt, b"HPKE-v1" + suite_id + label + ikm)


def labeled_expand(suite_id: bytes, prk: bytes, label: bytes, info: bytes, length: int) -> bytes:
    return hkdf_expand(prk, u16(length) + b"HPKE-v1" + suite_id + label + info, length)


def derive_key_pair(ikm: bytes):
    """RFC 9180 §7.1.3 for X25519: sk = LabeledExpand(LabeledExtract("", "dkp_prk", ikm), "sk", "", Nsk)."""
    dkp_prk = labeled_extract(KEM_SUITE_ID, b"", b"dkp_prk", ikm)
    sk = labeled_expand(KEM_SUITE_ID, dkp_prk, b"sk", b"", N_SK)
    return sk, x25519_base(sk)


def extract_and_expand(dh: bytes, kem_context: bytes) -> bytes:
    eae_prk = labeled_extract(KEM_SUITE_ID, b"", b"eae_prk", dh)
    return labeled_expand(KEM_SUITE_ID, eae_prk, b"shared_secret", kem_context, N_SECRET)


def encap_deterministic(pk_r: bytes, ikm_e: bytes):
    """RFC 9180 §4.1 Encap with the ephemeral pair from DeriveKeyPair(ikmE) (self-test only)."""
    sk_e, pk_e = derive_key_pair(ikm_e)
    dh = x25519(sk_e, pk_r)
    enc = pk_e
    return extract_and_expand(dh, enc + pk_r), enc


def decap(enc: bytes, sk_r: bytes) -> bytes:
    """RFC 9180 §4.1 Decap: DH(skR, pkE), kem_context = enc | pkRm."""
    if len(enc) != 32:
        raise FormatError("HPKE: enc is not 32 bytes")
    dh = x25519(sk_r, enc)
    return extract_and_expand(dh, enc + x25519_base(sk_r))


def key_schedule_base(shared_secret: bytes, info: bytes):
    """RFC 9180 §5.1 KeySchedule, mode_base (psk = psk_id = "") -> (key, base_nonce)."""
    psk_id_hash = labeled_extract(HPKE_SUITE_ID, b"", b"psk_id_hash", b"")
    info_hash = labeled_extract(HPKE_SUITE_ID, b"", b"info_hash", info)
    ctx = bytes([MODE_BASE]) + psk_id_hash + info_hash
    secret = labeled_extract(HPKE_SUITE_ID, shared_secret, b"secret", b"")
    return (labeled_expand(HPKE_SUITE_ID, secret, b"key", ctx, N_K),
            labeled_expand(HPKE_SUITE_ID, secret, b"base_nonce", ctx, N_N))


def hpke_open(enc: bytes, sk_r: bytes, info: bytes, aad: bytes, ct: bytes):
    """Single-shot base-mode Open (sequence number 0, so nonce = base_nonce). None on failure."""
    key, nonce = key_schedule_base(decap(enc, sk_r), info)
    return chacha20poly1305_ietf("decrypt", key, nonce, ct, aad)


def hpke_seal_deterministic(pk_r: bytes, info: bytes, aad: bytes, pt: bytes, ikm_e: bytes):
    """Single-shot base-mode Seal with a fixed ephemeral IKM (self-test only) -> (enc, ct)."""
    shared_secret, enc = encap_deterministic(pk_r, ikm_e)
    key, nonce = key_schedule_base(shared_secret, info)
    return enc, chacha20poly1305_ietf("encrypt", key, nonce, pt, aad)


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
def parse_root_file(data: bytes):
    """§3: "KBFR" | version:u16 | root(32) [| floor:u64 in version 2]; 38 or 46 bytes.
    Returns (root, floor); a version-1 file has floor 0."""
    if len(data) not in ROOT_FILE_LEN.values():
        raise FormatError(f"root file: length {len(data)}, expected 38 or 46")
    r = Reader(data, "root file")
    if r.take(4) != b"KBFR":
        raise FormatError("root file: bad magic")
    if (v := r.u16()) not in ROOT_FILE_LEN:
        raise FormatError(f"root file: unsupported version {v}")
    if len(data) != ROOT_FILE_LEN[v]:
        raise FormatError(f"root file: length {len(data)} does not match version {v}")
    root = r.take(32)
    floor = r.u64() if v == 2 else 0
    r.finish()
    return root, floor


def storage_domain(app: str, root_id: str = "file-root") -> bytes:
    """§4: SHA-256("keybay:v2:storage-domain" | 0x00 | LP(identity) | LP([assurance]) | LP(profile) | LP(location));
    the assurance is 0x02 (attested by the sandbox) on the portal root, else 0x01."""
    a = app.encode("utf-8")
    assurance = b"\x02" if root_id == "portal" else b"\x01"
    return sha256(transcript("keybay:v2:storage-domain", a, assurance, root_id.encode("ascii"),
                             b"keybay/" + a + b"/"))


def provider_state(domain: bytes, root: bytes, root_id: str = "file-root") -> bytes:
    """§4 / §4.2: plain concatenation after the 0x00, no length prefixes."""
    return sha256(b"keybay:v2:s1:provider-state:" + root_id.encode("ascii") + b"\x00" + domain + root)


KNOWN_ROOTS = ("file-root", "secret-service", "portal")
PORTAL_SECRET_LEN = (32, 1024)  # §4.3
PORTAL_FLOOR_LEN = 78


def portal_nonce(data: bytes) -> bytes:
    """§4.3: the floor file's rootNonce, after its magic and version (checked here)."""
    if len(data) != PORTAL_FLOOR_LEN:
        raise FormatError(f"portal floor file: length {len(data)}, expected {PORTAL_FLOOR_LEN}")
    r = Reader(data, "portal floor file")
    if r.take(4) != b"KBPF" or r.u16() != 2:
        raise FormatError("portal floor file: bad magic or version")
    return r.take(32)


def portal_root(secret: bytes, nonce: bytes, domain: bytes) -> bytes:
    """§4.3: root = HKDF(ikm = portalSecret | rootNonce, salt = storageDomain, info = "keybay:v2:s1:key:portal-root")."""
    return hkdf(secret + nonce, domain, b"keybay:v2:s1:key:portal-root")


def parse_portal_floor(data: bytes, root: bytes, domain: bytes) -> int:
    """§4.3: "KBPF" | version:u16 (= 2) | rootNonce(32) | floor:u64 | HMAC-SHA256(floorKey, the 46 bytes before)."""
    portal_nonce(data)
    r = Reader(data, "portal floor file")
    r.take(6 + 32)
    floor = r.u64()
    tag = r.take(32)
    r.finish()
    floor_key = hkdf(root, domain, b"keybay:v2:s1:key:portal-floor")
    if not hmac.compare_digest(hmac.new(floor_key, data[:46], hashlib.sha256).digest(), tag):
        raise FormatError("portal floor file: authentication failed")
    return floor


def root_of(ps: bytes):
    """§4.1: (root id, that root's own provider state) from the bootstrap's provider state."""
    if len(ps) == 32:
        return "file-root", ps
    r = Reader(ps, "provider state")
    id_len = r.u8()
    rid = r.take(id_len)
    if id_len == 0 or not PLUGIN_ID_RE.match(rid) or rid == b"file-root":
        raise FormatError("provider state names no root")
    state = r.take(r.u8())
    if 2 + id_len + len(state) == 32 and r.take(1) != b"\x00":
        raise FormatError("provider state: the padding byte is not 0x00")
    r.finish()
    return rid.decode("ascii"), state


def bootstrap_core(ps: bytes, suite: int = 1) -> bytes:
    return b"KBV2" + u16(suite) + LP(ps)


# §5 / §10: the labels that differ between suites (the table in §10 is the whole list).
LABELS = {
    1: {"package": "keybay:v2:s1:aad:platform-package", "manifest": "keybay:v2:s1:aad:manifest",
        "record": "keybay:v2:s1:aad:record-frame", "kmanifest": b"keybay:v2:s1:key:manifest",
        "kframe": b"keybay:v2:s1:key:record-frame"},
    2: {"package": "keybay:v2:s2:aad:methods-package", "manifest": "keybay:v2:s2:aad:manifest",
        "record": "keybay:v2:s2:aad:record-frame", "kmanifest": b"keybay:v2:s2:key:manifest",
        "kframe": b"keybay:v2:s2:key:record-frame"},
}


def package_aad(domain, core, suite=1): return transcript(LABELS[suite]["package"], domain, core)
def manifest_aad(domain, bootstrap, sealed_pkg, suite=1):
    return transcript(LABELS[suite]["manifest"], domain, bootstrap, sealed_pkg)
def record_aad(store_id, epoch, key, suite=1):
    return transcript(LABELS[suite]["record"], store_id, u64(epoch), b"\x01", key)


def derive_keys(kstore: bytes, store_id: bytes, suite: int = 1):
    """§5.2 / §10: (Kmanifest, Kframe)."""
    return (hkdf(kstore, store_id, LABELS[suite]["kmanifest"]),
            hkdf(kstore, store_id, LABELS[suite]["kframe"]))


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


class Envelope:
    """§10.1 envelope; `grants` is the raw grants field of a policy-2 package, None under policy 1."""
    __slots__ = ("method_id", "plugin_id", "label", "params", "grants", "salt", "public_key", "enc", "sealed_key")

    def __init__(self, grants=None, **kw):
        self.grants = grants
        for k, v in kw.items():
            setattr(self, k, v)

    def encode(self) -> bytes:
        return (self.method_id + LP(self.plugin_id) + LP(self.label) + LP(self.params)
                + (LP(self.grants) if self.grants is not None else b"")
                + self.salt + self.public_key + self.enc + self.sealed_key)


def check_label(label: bytes):
    """§10.1: 1–64 bytes of UTF-8 with no control characters (taken here as Unicode general
    category Cc: U+0000–U+001F and U+007F–U+009F; the spec does not define the set)."""
    try:
        text = label.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise FormatError("methods package: label is not valid UTF-8") from None
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text):
        raise FormatError("methods package: label contains a control character")


def decode_grants(grants: bytes):
    """§10.1: (LP(option) | LP(path)) * n, n <= 8: option [a-z0-9][a-z0-9._-]{0,63}, path absolute
    UTF-8 of 2..4095 bytes without NUL, no option twice. Returns [(option, path)]."""
    r = Reader(grants, "grants")
    out = []

    def lp(what, lo, hi):
        n = r.u32()
        if not lo <= n <= hi:
            raise FormatError(f"methods package: grant {what} length {n} out of range {lo}..{hi}")
        return r.take(n)
    while r.p < len(grants):
        if len(out) == MAX_GRANT_COUNT:
            raise FormatError(f"methods package: more than {MAX_GRANT_COUNT} grants")
        option, path = lp("option", 1, MAX_PLUGIN_ID), lp("path", 2, MAX_GRANT_PATH)
        if not PLUGIN_ID_RE.match(option):
            raise FormatError(f"methods package: malformed grant option {option!r}")
        try:
            path.decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            raise FormatError("methods package: grant path is not UTF-8") from None
        if not path.startswith(b"/") or b"\0" in path:
            raise FormatError("methods package: grant path is not an absolute path")
        if any(option == o for o, _ in out):
            raise FormatError(f"methods package: option {option!r} granted twice")
        out.append((option, path))
    return out


def decode_methods_package(pt: bytes):
    """§10.1: storeId(16) | epoch:u64 | policy:u8 (1 or 2) | count:u8 | envelope * count; under
    policy 2 each envelope has LP(grants) after LP(params), and at least one grant is there."""
    r = Reader(pt, "methods package")
    store_id, epoch, policy = r.take(16), r.u64(), r.u8()
    if policy not in (1, 2):
        raise FormatError(f"methods package: unsupported policy {policy} (suite 2 requires 1 or 2)")
    if not 1 <= epoch <= (1 << 63) - 1:
        raise FormatError(f"methods package: epoch {epoch} out of range")
    count = r.u8()
    if not 1 <= count <= MAX_METHODS:
        raise FormatError(f"methods package: count {count} out of range 1..{MAX_METHODS}")

    def lp(what, lo, hi):
        n = r.u32()
        if not lo <= n <= hi:  # checked before anything is read
            raise FormatError(f"methods package: {what} length {n} out of range {lo}..{hi}")
        return r.take(n)

    envelopes, ids = [], set()
    for _ in range(count):
        method_id = r.take(16)
        plugin_id = lp("pluginId", 1, MAX_PLUGIN_ID)
        if not PLUGIN_ID_RE.match(plugin_id):
            raise FormatError(f"methods package: malformed pluginId {plugin_id!r}")
        label = lp("label", 1, MAX_LABEL)
        check_label(label)
        params = lp("params", 0, MAX_PARAMS)
        grants = lp("grants", 0, MAX_GRANTS) if policy == 2 else None
        if grants is not None:
            decode_grants(grants)
        salt, public_key, enc, sealed_key = r.take(16), r.take(32), r.take(32), r.take(48)
        if method_id in ids:
            raise FormatError(f"methods package: duplicate method id {method_id.hex()}")
        ids.add(method_id)
        envelopes.append(Envelope(method_id=method_id, plugin_id=plugin_id, label=label, params=params, grants=grants,
                                  salt=salt, public_key=public_key, enc=enc, sealed_key=sealed_key))
    r.finish()
    if policy == 2 and not any(e.grants for e in envelopes):
        raise FormatError("methods package: policy 2 without a single grant")
    return store_id, epoch, envelopes


def decode_passphrase_params(params: bytes):
    """§11: format:u8 (= 1) | argon2Version:u32 (= 0x13) | memoryKiB:u32 | iterations:u32 | lanes:u32 | salt(16)."""
    if len(params) != PASSPHRASE_PARAMS_LEN:
        raise FormatError(f"passphrase params: length {len(params)}, expected 33")
    r = Reader(params, "passphrase params")
    fmt, version, memory, iterations, lanes, salt = r.u8(), r.u32(), r.u32(), r.u32(), r.u32(), r.take(16)
    r.finish()
    if fmt != 1:
        raise FormatError(f"passphrase params: unsupported format {fmt}")
    if version != ARGON2_VERSION:
        raise FormatError(f"passphrase params: unsupported Argon2 version {version:#x}")
    if not 1 <= lanes <= MAX_LANES:
        raise FormatError(f"passphrase params: lanes {lanes} out of range 1..{MAX_LANES}")
    if not 1 <= iterations <= MAX_ITERATIONS:
        raise FormatError(f"passphrase params: iterations {iterations} out of range 1..{MAX_ITERATIONS}")
    if not 8 * lanes <= memory <= MAX_MEMORY_KIB:
        raise FormatError(f"passphrase params: memoryKiB {memory} out of range {8 * lanes}..{MAX_MEMORY_KIB}")
    return memory, iterations, lanes, salt


def passphrase_secret(params: bytes, passphrase: bytes) -> bytes:
    """§11: M = Argon2id(passphrase, salt, t = iterations, m = memoryKiB, p = lanes), 32 bytes."""
    memory, iterations, lanes, salt = decode_passphrase_params(params)  # limits before any work
    if not 1 <= len(passphrase) <= MAX_PASSPHRASE:
        raise FormatError(f"passphrase: length {len(passphrase)} out of range 1..{MAX_PASSPHRASE}")
    return argon2id(passphrase, salt, iterations, memory, lanes)


def method_ikm(m: bytes, store_id: bytes, env: "Envelope") -> bytes:
    """§10.2: HKDF(M, salt, transcript("keybay:v2:s2:key:method", storeId, methodId, pluginId))."""
    return hkdf(m, env.salt, transcript("keybay:v2:s2:key:method", store_id, env.method_id, env.plugin_id))


def envelope_info(store_id: bytes, env: "Envelope") -> bytes:
    return transcript("keybay:v2:s2:hpke:method-envelope", store_id, env.method_id, env.plugin_id,
                      env.salt, env.public_key)


def envelope_aad(store_id: bytes, epoch: int, method_id: bytes) -> bytes:
    return transcript("keybay:v2:s2:aad:method-envelope", store_id, u64(epoch), method_id)


def open_envelope(m: bytes, store_id: bytes, epoch: int, env: "Envelope") -> bytes:
    """§10.2–§10.3: derive (sk, pk) from M, compare pk in constant time before decrypting
    anything, then HPKE.Open(enc, sk, info, aad, sealedKey) -> Kstore (32 bytes)."""
    sk, pk = derive_key_pair(method_ikm(m, store_id, env))
    if not hmac.compare_digest(pk, env.public_key):
        raise WrongSecret()
    kstore = hpke_open(env.enc, sk, envelope_info(store_id, env), envelope_aad(store_id, epoch, env.method_id),
                       env.sealed_key)
    if kstore is None:
        raise FormatError(f"envelope {env.method_id.hex()}: HPKE open failed after the public key matched")
    if len(kstore) != 32:
        raise FormatError("envelope: Kstore is not 32 bytes")
    return kstore


def select_envelope(envelopes, method_id):
    """§10.3: by methodId if given, else the only passphrase envelope; never try several."""
    if method_id is not None:
        found = [e for e in envelopes if e.method_id == method_id]
        if not found:
            raise FormatError(f"store has no method {method_id.hex()}")
        env = found[0]
        if env.plugin_id != b"passphrase":
            raise FormatError(f"method {method_id.hex()} uses plugin {env.plugin_id.decode()!r}; "
                              "this reader can only open passphrase methods")
        return env
    found = [e for e in envelopes if e.plugin_id == b"passphrase"]
    if not found:
        raise FormatError("store has no passphrase method")
    return found[0]  # decode_methods_package guarantees at most one


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


def open_store(app: str, root_path, store_path: str, passphrase=None, method_id=None, root_secret_path=None,
               portal_secret_path=None, portal_floor_path=None):
    # 1. read both files, refusing oversized ones before reading.
    portal_floor = None
    if portal_secret_path is not None:
        root_data, kind = read_limited(portal_secret_path, PORTAL_SECRET_LEN[1], "portal secret"), "portal"
        portal_floor = read_limited(portal_floor_path, PORTAL_FLOOR_LEN, "portal floor file")
    elif root_secret_path is not None:
        root_data, kind = read_limited(root_secret_path, 40, "root secret"), "secret-service"
    else:
        root_data, kind = read_limited(root_path, max(ROOT_FILE_LEN.values()), "root file"), "file-root"
    data = read_limited(store_path, MAX_STORE_FILE, "store file")
    return open_store_bytes(app, root_data, data, passphrase, method_id, kind, portal_floor)


def open_store_bytes(app: str, root_data: bytes, data: bytes, passphrase=None, method_id=None, root_kind="file-root",
                     portal_floor=None):
    """§6 (and §10 for suite 2). Returns (keys, open_record, info). root_data is a root file
    (§3) for file-root, the item's secret (§4.2: root(32), or root(32) | floor:u64) for secret-service."""
    if root_kind == "file-root":
        root, floor = parse_root_file(root_data)
    elif root_kind == "portal":
        if not PORTAL_SECRET_LEN[0] <= len(root_data) <= PORTAL_SECRET_LEN[1]:
            raise FormatError(f"portal secret: length {len(root_data)}, expected {PORTAL_SECRET_LEN[0]}..{PORTAL_SECRET_LEN[1]}")
        root, floor = None, 0  # derived from the storage domain below (§4.3)
    elif len(root_data) not in (32, 40):
        raise FormatError(f"root secret: length {len(root_data)}, expected 32 or 40")
    else:
        root = root_data[:32]
        floor = struct.unpack(">Q", root_data[32:])[0] if len(root_data) == 40 else 0
    if len(data) > MAX_STORE_FILE:
        raise FormatError(f"store file: size {len(data)} exceeds limit {MAX_STORE_FILE}")
    # 2. bootstrap and layout (§5, in the listed order).
    r = Reader(data, "store bootstrap")
    if r.take(4) != b"KBV2":
        raise FormatError("store: bad magic")
    if (suite := r.u16()) not in (1, 2):
        raise FormatError(f"store: unsupported suite {suite}")
    if (ps_len := r.u32()) > MAX_PROVIDER_STATE:
        raise FormatError(f"store: provider state length {ps_len} > 64")
    ps = r.take(ps_len)
    core_end = r.p
    pkg_len = r.u32()
    if not OVERHEAD < pkg_len <= MAX_SEALED_PACKAGE[suite]:
        raise FormatError(f"store: sealed package length {pkg_len} out of range for suite {suite}")
    core, bootstrap = data[:core_end], data[:r.p]
    sealed_pkg = r.take(pkg_len)
    pkg_end = r.p
    if len(data) > 16 * 1024 * 1024 + pkg_len:  # §5: a writer keeps all but the package within 16 MiB
        raise FormatError(f"store: file length {len(data)} exceeds 16 MiB + package")
    if len(data) - pkg_end < 4:
        raise FormatError("store: truncated (no sealed manifest length)")
    man_len = struct.unpack(">I", data[-4:])[0]
    if not OVERHEAD < man_len <= MAX_SEALED_MANIFEST:
        raise FormatError(f"store: sealed manifest length {man_len} out of range")
    if man_len > len(data) - 4 - pkg_end:
        raise FormatError("store: sealed manifest does not fit after the sealed package")
    man_start = len(data) - 4 - man_len
    region, sealed_man = data[pkg_end:man_start], data[man_start:len(data) - 4]
    if suite == 1 and method_id is not None:
        raise FormatError("store is platform-only (suite 1): it has no method to select")
    # 3. the root the provider state names (§4.1), the storage domain with it as the profile, and
    #    its provider state, constant-time compare BEFORE any decryption. (§10's table does not
    #    list the provider-state label, so both suites use it.)
    root_id, own_state = root_of(ps)
    if root_id not in KNOWN_ROOTS:
        raise FormatError(f"store is on the root {root_id!r}, which this reader does not know")
    if root_id != root_kind:
        raise FormatError(f"store is on the root {root_id}, but a {root_kind} root was given")
    domain = storage_domain(app, root_id)
    if root_kind == "portal":
        root = portal_root(root_data, portal_nonce(portal_floor), domain)
    if not hmac.compare_digest(provider_state(domain, root, root_id), own_state):
        raise FormatError("provider state mismatch: platform key invalidated "
                          "(root does not belong to this store)")
    if root_kind == "portal":
        floor = parse_portal_floor(portal_floor, root, domain)
    # 4. open and decode the key package (root-sealed in both suites).
    pkg_pt = open_sealed(root, sealed_pkg, package_aad(domain, core, suite), "key package")
    info = {"suite": suite}
    if suite == 1:
        store_id, epoch, kstore = decode_package(pkg_pt)
    else:
        store_id, epoch, envelopes = decode_methods_package(pkg_pt)
    # §6.1: a package older than the root's floor is an older copy put back.
    if epoch < floor:
        raise RolledBack(f"rolled back: the key package is epoch {epoch}, the root file's floor is {floor}")
    if suite == 2:
        info["methods"] = [{"id": e.method_id.hex(), "plugin": e.plugin_id.decode("ascii"),
                            "label": e.label.decode("utf-8")} for e in envelopes]
        if passphrase is None:
            raise Protected("store is protected (suite 2, methods: "
                            + ", ".join(f"{m['id']} {m['plugin']}" for m in info["methods"])
                            + "); give --passphrase-file")
        env = select_envelope(envelopes, method_id)
        m = passphrase_secret(env.params, passphrase)
        kstore = open_envelope(m, store_id, epoch, env)
    # 5. derive keys (Kstore stays provisional until the manifest authenticates).
    kmanifest, kframe = derive_keys(kstore, store_id, suite)
    # 6. open and decode the manifest, check frame coverage and digests.
    entries = decode_manifest(open_sealed(
        kmanifest, sealed_man, manifest_aad(domain, bootstrap, sealed_pkg, suite), "manifest"))
    frames = split_frames(region, entries)
    # 7. per-record frame opening.
    def open_record(key: bytes) -> bytes:
        return open_sealed(kframe, frames[key], record_aad(store_id, epoch, key, suite), f"frame {key!r}")
    return [k for k, _, _ in entries], open_record, info


# ---------------------------------------------------------------- self-test (RFC 5869, RFC 9180, §9, §10.5)
def self_test():
    H = bytes.fromhex
    def check(name, got, want):
        if got != want:
            raise FormatError(f"self-test: {name} mismatch: {got.hex() if isinstance(got, bytes) else got}")
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
    # §9.2 file-root worked example: the complete 191-byte store opens and is empty.
    store_file = H("4b425632000100000020453394af4285f8c6209542452987a75fe92b8435735247451f7eb924d2c42c22"
                   "00000061a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b755fd180ea348b2bb797637926d2d"
                   "bddf3baa9f2caa06cad81d60aac5c487db10f6af83056d6a51e28adb5f64a8009a18921e1fc3e154ed99"
                   "c57a842e69e436bb1ce164ae121e5859f198999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb4"
                   "6de0f9d9ed6526f858674d7afab2d24b46853f0000002c")
    check("§9.2 storageDomain", storage_domain("demo"),
          H("a2cf8ce89f434303fbef1c6ab02b0d1944c4b5ea9b229b4d72d3e1ecc89ec2cb"))
    check("§9.2 providerState", provider_state(storage_domain("demo"), bytes(range(0x20))),
          H("453394af4285f8c6209542452987a75fe92b8435735247451f7eb924d2c42c22"))
    keys, _, _ = open_store_bytes("demo", b"KBFR" + u16(1) + bytes(range(0x20)), store_file)
    check("§9.2 store opens empty", keys, [])

    self_test_hpke_rfc9180()
    self_test_argon2()
    self_test_methods_suite()
    print("self-test ok")


def self_test_hpke_rfc9180():
    """RFC 9180 Appendix A.2.1 / A.2.1.1 (sequence number 0): DHKEM(X25519, HKDF-SHA256),
    HKDF-SHA256, ChaCha20Poly1305, base mode."""
    H = bytes.fromhex
    def check(name, got, want):
        if got != want:
            raise FormatError(f"self-test: RFC 9180 A.2.1 {name} mismatch: {got.hex() if got else got}")
    info = H("4f6465206f6e2061204772656369616e2055726e")
    ikm_e = H("909a9b35d3dc4713a5e72a4da274b55d3d3821a37e5d099e74a647db583a904b")
    ikm_r = H("1ac01f181fdf9f352797655161c58b75c656a6cc2716dcb66372da835542e1df")
    sk_em = H("f4ec9b33b792c372c1d2c2063507b684ef925b8c75a42dbcbf57d63ccd381600")
    pk_em = H("1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a")
    sk_rm = H("8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb")
    pk_rm = H("4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a")
    shared = H("0bbe78490412b4bbea4812666f7916932b828bba79942424abb65244930d69a7")
    key, base_nonce = H("ad2744de8e17f4ebba575b3f5f5a8fa1f69c2a07f6e7500bc60ca6e3e3ec1c91"), H("5c4d98150661b848853b547f")
    pt, aad = H("4265617574792069732074727574682c20747275746820626561757479"), H("436f756e742d30")
    ct = H("1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28")
    check("DeriveKeyPair(ikmE)", b"".join(derive_key_pair(ikm_e)), sk_em + pk_em)
    check("DeriveKeyPair(ikmR)", b"".join(derive_key_pair(ikm_r)), sk_rm + pk_rm)
    check("Encap", b"".join(encap_deterministic(pk_rm, ikm_e)), shared + pk_em)
    check("Decap", decap(pk_em, sk_rm), shared)
    check("KeySchedule", b"".join(key_schedule_base(shared, info)), key + base_nonce)
    check("Seal", b"".join(hpke_seal_deterministic(pk_rm, info, aad, pt, ikm_e)), pk_em + ct)
    check("Open", hpke_open(pk_em, sk_rm, info, aad, ct), pt)
    check("Open with a wrong aad fails", hpke_open(pk_em, sk_rm, info, aad + b"x", ct), None)
    try:
        decap(bytes(32), sk_rm)  # all-zero point: the DH result is all zero, which must be refused
        raise FormatError("self-test: X25519 accepted a low-order point")
    except FormatError as e:
        if "accepted" in str(e):
            raise


def self_test_argon2():
    """Pins the libargon2 binding, including version 0x13: the Argon2 reference implementation's
    Argon2id v0x13 vector ("password", "somesalt", t=2, m=65536 KiB, p=1), confirmed with the
    argon2(1) command-line tool."""
    got = argon2id(b"password", b"somesalt", 2, 1 << 16, 1)
    if got != bytes.fromhex("09316115d5cf24ed5a15a31a3ba326e5cf32edc24702987c02b6566f61913cf7"):
        raise FormatError(f"self-test: Argon2id vector mismatch: {got.hex()}")


def self_test_methods_suite():
    """§10.5 worked example."""
    H = bytes.fromhex
    def check(name, got, want):
        if got != want:
            raise FormatError(f"self-test: §10.5 {name} mismatch: {got.hex() if isinstance(got, bytes) else got}")
    store_id, kstore, epoch = bytes(range(0x10, 0x20)), bytes(range(0x20, 0x40)), 8
    method_id, salt, m = bytes(range(0x40, 0x50)), bytes(range(0x50, 0x60)), bytes(range(0x60, 0x80))
    params = b"\x01" + u32(0x13) + u32(0x10000) + u32(3) + u32(4) + bytes(range(0xa0, 0xb0))
    ikm_e = bytes(range(0xc0, 0xe0))
    public_key = H("4c42916b2a866f7d719490078b495c6fa22d267b29ed6288a28232bfd3d26453")
    enc = H("0a4244187e020c1b51d51502593322001217c1db3bc91bf837491c9b71807605")
    sealed_key = H("e7652ee4029f2972103df040337696109f8e1f478a4ffb0a4553140a25c9064ee2192fc513f0bf5ce71c15ee0133fc7d")
    package = H("101112131415161718191a1b1c1d1e1f00000000000000080101404142434445464748494a4b4c4d4e4f"
                "0000000a70617373706872617365000000046d61696e0000002101000000130001000000000003000000"
                "04a0a1a2a3a4a5a6a7a8a9aaabacadaeaf505152535455565758595a5b5c5d5e5f4c42916b2a866f7d71"
                "9490078b495c6fa22d267b29ed6288a28232bfd3d264530a4244187e020c1b51d51502593322001217c1"
                "db3bc91bf837491c9b71807605e7652ee4029f2972103df040337696109f8e1f478a4ffb0a4553140a25"
                "c9064ee2192fc513f0bf5ce71c15ee0133fc7d")
    check("params length", len(params), 33)
    check("params decode", decode_passphrase_params(params), (0x10000, 3, 4, bytes(range(0xa0, 0xb0))))
    # Forward: publicKey from M, then the deterministic seal reproduces enc and sealedKey.
    env = Envelope(method_id=method_id, plugin_id=b"passphrase", label=b"main", params=params, salt=salt,
                   public_key=b"", enc=b"", sealed_key=b"")
    _, pk = derive_key_pair(method_ikm(m, store_id, env))
    check("publicKey", pk, public_key)
    env.public_key = pk
    got_enc, got_sealed = hpke_seal_deterministic(pk, envelope_info(store_id, env),
                                                  envelope_aad(store_id, epoch, method_id), kstore, ikm_e)
    check("enc", got_enc, enc)
    check("sealedKey", got_sealed, sealed_key)
    env.enc, env.sealed_key = got_enc, got_sealed
    check("methodsPackage encode", store_id + u64(epoch) + b"\x01" + b"\x01" + env.encode(), package)
    # Backward: decode the package and open the envelope with M.
    sid, ep, envelopes = decode_methods_package(package)
    check("decoded storeId/epoch/count", (sid, ep, len(envelopes)), (store_id, epoch, 1))
    e = select_envelope(envelopes, None)
    check("decoded envelope", e.encode(), env.encode())
    check("select by methodId", select_envelope(envelopes, method_id).method_id, method_id)
    check("Kstore", open_envelope(m, sid, ep, e), kstore)
    # Negative checks: a wrong M is a wrong secret (before any decryption); strict decoding.
    try:
        open_envelope(bytes(32), sid, ep, e)
        raise FormatError("self-test: §10.5 envelope opened with a wrong M")
    except WrongSecret:
        pass
    bad = {
        "trailing byte": package + b"\x00",
        "policy 0": package[:24] + b"\x00" + package[25:],
        "count 0": package[:25] + b"\x00" + package[26:],
        "count 2 (truncated)": package[:25] + b"\x02" + package[26:],
        "epoch 0": package[:16] + u64(0) + package[24:],
        "uppercase pluginId": package.replace(b"passphrase", b"Passphrase"),
        "control char in label": package.replace(b"main", b"ma\nn"),
        "duplicate method id": package[:25] + b"\x02" + package[26:] + package[26:].replace(b"passphrase", b"passphrasf"),
    }
    # One method per plugin is a rule some plugins declare and the host enforces at enrollment;
    # the format has no such rule, so two passphrase envelopes decode.
    two = decode_methods_package(package[:25] + b"\x02" + package[26:] + b"\x41" + package[27:])
    if len(two[2]) != 2:
        raise FormatError("self-test: §10.5 two passphrase envelopes did not decode as two")
    # Policy 2: the same envelope with one file grant after its params (§10.5).
    grants = LP(b"path") + LP(b"/home/user/keys/a.key")
    check("grants field", grants, H("0000000470617468000000152f686f6d652f757365722f6b6579732f612e6b6579"))
    env.grants = grants
    with_grants = store_id + u64(epoch) + b"\x02" + b"\x01" + env.encode()
    check("methodsPackage with a grant", with_grants, H(
        "101112131415161718191a1b1c1d1e1f00000000000000080201404142434445464748494a4b4c4d4e4f0000000a7061737370"
        "6872617365000000046d61696e000000210100000013000100000000000300000004a0a1a2a3a4a5a6a7a8a9aaabacadaeaf00"
        "0000210000000470617468000000152f686f6d652f757365722f6b6579732f612e6b6579505152535455565758595a5b5c5d5e"
        "5f4c42916b2a866f7d719490078b495c6fa22d267b29ed6288a28232bfd3d264530a4244187e020c1b51d51502593322001217"
        "c1db3bc91bf837491c9b71807605e7652ee4029f2972103df040337696109f8e1f478a4ffb0a4553140a25c9064ee2192fc513"
        "f0bf5ce71c15ee0133fc7d"))
    sid, ep, envelopes = decode_methods_package(with_grants)
    check("grants decode", decode_grants(envelopes[0].grants), [(b"path", b"/home/user/keys/a.key")])
    check("Kstore (policy 2)", open_envelope(m, sid, ep, select_envelope(envelopes, None)), kstore)
    at = with_grants.index(grants) - 4
    def regranted(g): return with_grants[:at] + LP(g) + with_grants[at + 4 + len(grants):]
    bad.update({"policy 2 without a grant": regranted(b""), "a relative path": regranted(LP(b"path") + LP(b"keys/a")),
                "an option granted twice": regranted(grants + grants), "policy 3": with_grants[:24] + b"\x03" + with_grants[25:],
                "an uppercase option": regranted(LP(b"Path") + LP(b"/a")),
                "nine grants": regranted(b"".join(LP(b"o%d" % i) + LP(b"/a") for i in range(9)))})
    for name, blob in bad.items():
        try:
            decode_methods_package(blob)
            raise FormatError(f"self-test: §10.5 methods package with {name} decoded")
        except FormatError as err:
            if "decoded" in str(err):
                raise
    for name, blob in {"format 2": b"\x02" + params[1:], "version 0x10": params[:1] + u32(0x10) + params[5:],
                       "lanes 9": params[:13] + u32(9) + params[17:], "iterations 17": params[:9] + u32(17) + params[13:],
                       "memory below 8 x lanes": params[:5] + u32(31) + params[9:], "32 bytes": params[:32]}.items():
        try:
            decode_passphrase_params(blob)
            raise FormatError(f"self-test: passphrase params with {name} decoded")
        except FormatError as err:
            if "decoded" in str(err):
                raise


# ---------------------------------------------------------------- command line
def read_passphrase_file(path: str) -> bytes:
    """The file's bytes with one trailing newline removed (as §11 says of --passphrase-fd)."""
    with open(path, "rb") as f:
        data = f.read(MAX_PASSPHRASE + 2)
    if data.endswith(b"\n"):
        data = data[:-1]
    return data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Independent Keybay V2 store reader (suite 1 and suite 2 / passphrase)")
    ap.add_argument("--app"); ap.add_argument("--root"); ap.add_argument("--store")
    ap.add_argument("--root-secret", metavar="FILE", help="the secret of a secret-service item (32 or 40 bytes)")
    ap.add_argument("--portal-secret", metavar="FILE", help="the Secret portal's secret for APP (32..1024 bytes)")
    ap.add_argument("--portal-floor", metavar="FILE", help="the portal root's floor file (46 bytes)")
    ap.add_argument("--key"); ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--passphrase-file", metavar="FILE")
    ap.add_argument("--method", metavar="METHOD-ID", help="32 hex digits")
    ap.add_argument("--json", action="store_true", help="a failure is also {\"error\": {\"code\", \"message\"}} on stdout")
    args = ap.parse_args(argv)  # exits 2 on usage errors

    def failed(code: str, message: str) -> int:
        print(f"keybay_read: {message}", file=sys.stderr)
        if args.json:
            print(json.dumps({"error": {"code": code, "message": message}}))
        return 1

    try:
        if args.self_test:
            self_test()
            return 0
        roots = [args.root, args.root_secret, args.portal_secret]
        if not (args.app and sum(r is not None for r in roots) == 1 and args.store):
            ap.error("--app, --store and one of --root, --root-secret and --portal-secret are required")
        if (args.portal_secret is None) != (args.portal_floor is None):
            ap.error("--portal-secret and --portal-floor go together")
        if not APP_RE.match(args.app.encode("utf-8")):
            ap.error(f"invalid application id {args.app!r}")
        method_id = None
        if args.method is not None:
            if not METHOD_ID_RE.match(args.method):
                ap.error("--method must be 32 hex digits")
            method_id = bytes.fromhex(args.method)
        passphrase = None
        if args.passphrase_file is not None:
            passphrase = read_passphrase_file(args.passphrase_file)
            if not 1 <= len(passphrase) <= MAX_PASSPHRASE:
                ap.error(f"the passphrase must be 1..{MAX_PASSPHRASE} bytes")
        keys, open_record, _info = open_store(args.app, args.root, args.store, passphrase, method_id, args.root_secret,
                                              args.portal_secret, args.portal_floor)
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
    except WrongSecret:
        return failed("wrong-secret", "wrong passphrase")
    except Protected as e:
        return failed("authentication-required", str(e))
    except RolledBack as e:
        return failed("rolled-back", str(e))
    except FormatError as e:
        return failed("format", str(e))
    except OSError as e:
        return failed("io", str(e))


if __name__ == "__main__":
    sys.exit(main())
