// SPDX-License-Identifier: Apache-2.0
/*
 * tpm2-pin — a method whose secret the TPM gives out only for the user's PIN, as a Keybay method
 * plugin (libkeybay-tpm2-pin.so).
 *
 * Enroll seals 32 random bytes M (a keyed-hash object, TPM2_Create) under the storage primary
 * the tpm2 root uses too, with the PIN as the object's authValue and a policy that needs it
 * (PolicyAuthValue, after PolicyPCR when --opt pcrs= binds it to PCRs). The object is not noDA:
 * every wrong PIN counts towards the TPM's dictionary-attack lockout, so the PIN is guessed at
 * the TPM's pace only. The parameters (docs/tpm2-pin.md) hold the object's public and private
 * areas and the PCR mask; only this machine's TPM loads them.
 *
 * Unwrap reads the TPM's lockout counters, asks for the PIN with the tries left (not holding the
 * TPM while the user types), then loads the object and unseals it in a policy session salted
 * with the primary, so neither the PIN (the HMAC) nor M (response encryption) crosses to the TPM
 * in a form that can be replayed or guessed offline.
 *
 * tpm2-tss, the choice of TPM (KEYBAY_TPM2_TCTI, the device by default), the time bound
 * (KEYBAY_TPM2_TIMEOUT_MS) and taking turns with this user's other processes come from the code
 * the tpm2 root shares: Plugins/Support/tpm2.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "keybay_plugin.h"
#include "keybay_plugin_descriptor.h"
#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "keybay_tpm2.h"
#include "keybay_tpm2_session.h"

#define PLUGIN "tpm2-pin"
#define USER "tpm2-pin method"
#define fail keybay_rf_fail
#define put_be keybay_tpm2_put_be
#define get_be keybay_tpm2_get_be

#define PARAMS_MAGIC "KBTP"
#define PARAMS_VERSION 1        /* literal PCRs or none */
#define PARAMS_VERSION_SIGNED 2 /* a signed PCR policy: its key and signature file follow */
#define PARAMS_HEADER 10 /* magic(4) | version:u16 | pcrs:u32 */
#define MAX_PARAMS_BYTES 2048
#define MIN_PIN 4
#define MAX_PIN 32 /* the TPM's limit for a SHA-256 object's authValue */

/* ---------------------------------------------------------------- the parameters

   "KBTP" | version:u16 (1 or 2) | pcrs:u32 | public:LP16 | private:LP16, and for version 2 (a
   signed policy) | spki:LP16 | signaturePath:LP16 (docs/tpm2-pin.md) */

typedef struct sealed_object {
    uint32_t pcrs;
    TPM2B_PUBLIC public;
    TPM2B_PRIVATE private;
    int has_signed;
    keybay_tpm2_signing_key key;
    char signature_path[KEYBAY_TPM2_SIGNATURE_PATH_BYTES];
} sealed_object;

/* The layout alone, without tss2 (describe needs no TPM library): the PCR mask and where the
   two areas are. */
static keybay_status split_params(const keybay_host *host, const uint8_t *p, size_t n, uint32_t *pcrs, const uint8_t *parts[4],
                                  size_t lengths[4]) {
    if (!p || n < PARAMS_HEADER || n > MAX_PARAMS_BYTES || memcmp(p, PARAMS_MAGIC, 4) != 0)
        return fail(host, KEYBAY_ERR_MALFORMED_PARAMS, "tpm2-pin: the method's parameters are not a tpm2-pin sealed object (%zu bytes)", n);
    unsigned version = (unsigned)get_be(p + 4, 2);
    if (version != PARAMS_VERSION && version != PARAMS_VERSION_SIGNED)
        return fail(host, KEYBAY_ERR_MALFORMED_PARAMS, "tpm2-pin: parameters of version %u; this plugin reads versions 1 and 2", version);
    *pcrs = (uint32_t)get_be(p + 6, 4);
    size_t at = PARAMS_HEADER;
    int count = version == PARAMS_VERSION_SIGNED ? 4 : 2;
    lengths[2] = lengths[3] = 0;
    parts[2] = parts[3] = NULL;
    for (int i = 0; i < count; i++) {
        if (n - at < 2 || (lengths[i] = (size_t)get_be(p + at, 2)) > n - at - 2)
            return fail(host, KEYBAY_ERR_MALFORMED_PARAMS, "tpm2-pin: the method's parameters are truncated");
        parts[i] = p + at + 2;
        at += 2 + lengths[i];
    }
    if (at != n) return fail(host, KEYBAY_ERR_MALFORMED_PARAMS, "tpm2-pin: the method's parameters have %zu bytes too many", n - at);
    if (*pcrs >> 24) return fail(host, KEYBAY_ERR_MALFORMED_PARAMS, "tpm2-pin: the parameters name PCRs above 23 (mask 0x%08x)", (unsigned)*pcrs);
    return KEYBAY_OK;
}

/* Decodes strictly (tss2 loaded: it unmarshals the areas), each area exactly its own size. */
static keybay_status decode_params(const keybay_host *host, const uint8_t *p, size_t n, sealed_object *o) {
    const uint8_t *parts[4];
    size_t lengths[4], off_pub = 0, off_priv = 0;
    keybay_status s = split_params(host, p, n, &o->pcrs, parts, lengths);
    if (s != KEYBAY_OK) return s;
    o->has_signed = parts[2] != NULL;
    if (o->has_signed) {
        if (o->pcrs == 0 || lengths[3] >= sizeof o->signature_path || (lengths[3] && parts[3][0] != '/') || memchr(parts[3], 0, lengths[3]) ||
            keybay_tpm2_signing_key_from_der(NULL, parts[2], lengths[2], &o->key) != KEYBAY_OK)
            return fail(host, KEYBAY_ERR_MALFORMED_PARAMS, "tpm2-pin: the signed policy in the method's parameters is malformed");
        memcpy(o->signature_path, parts[3], lengths[3]);
        o->signature_path[lengths[3]] = 0;
    }
    memset(&o->public, 0, sizeof o->public);
    memset(&o->private, 0, sizeof o->private);
    /* tss2 does not hold the public area to its own size field, and takes an empty one: we do not */
    if (lengths[0] <= 2 || get_be(parts[0], 2) != lengths[0] - 2 ||
        T(Tss2_MU_TPM2B_PUBLIC_Unmarshal)(parts[0], lengths[0], &off_pub, &o->public) != TSS2_RC_SUCCESS || off_pub != lengths[0] ||
        lengths[1] <= 2 || T(Tss2_MU_TPM2B_PRIVATE_Unmarshal)(parts[1], lengths[1], &off_priv, &o->private) != TSS2_RC_SUCCESS ||
        off_priv != lengths[1] || o->public.publicArea.type != TPM2_ALG_KEYEDHASH)
        return fail(host, KEYBAY_ERR_MALFORMED_PARAMS, "tpm2-pin: the sealed object in the method's parameters is malformed");
    return KEYBAY_OK;
}

static keybay_status encode_params(const keybay_host *host, const sealed_object *o, keybay_buffer *out) {
    uint8_t *p = malloc(MAX_PARAMS_BYTES);
    if (!p) return fail(host, KEYBAY_ERR_INTERNAL, "tpm2-pin: out of memory");
    memcpy(p, PARAMS_MAGIC, 4);
    put_be(p + 4, o->has_signed ? PARAMS_VERSION_SIGNED : PARAMS_VERSION, 2);
    put_be(p + 6, o->pcrs, 4);
    size_t at = PARAMS_HEADER, offset = 0;
    if (T(Tss2_MU_TPM2B_PUBLIC_Marshal)(&o->public, p + at + 2, MAX_PARAMS_BYTES - at - 4, &offset) != TSS2_RC_SUCCESS) goto too_big;
    put_be(p + at, offset, 2);
    at += 2 + offset;
    offset = 0;
    if (T(Tss2_MU_TPM2B_PRIVATE_Marshal)(&o->private, p + at + 2, MAX_PARAMS_BYTES - at - 2, &offset) != TSS2_RC_SUCCESS) goto too_big;
    put_be(p + at, offset, 2);
    at += 2 + offset;
    if (o->has_signed) {
        size_t length = keybay_tpm2_signed_encode(&o->key, o->signature_path, p + at, MAX_PARAMS_BYTES - at);
        if (!length) goto too_big;
        at += length;
    }
    out->data = p;
    out->length = at;
    return KEYBAY_OK;
too_big:
    free(p);
    return fail(host, KEYBAY_ERR_INTERNAL, "tpm2-pin: the sealed object does not fit the method's parameters");
}

/* ---------------------------------------------------------------- the TPM, one operation */

/* <state_home>/keybay, where this user's processes take turns on the TPM with the tpm2 root:
   $XDG_STATE_HOME when absolute, else $HOME/.local/state (made 0700 when missing). */
static keybay_status open_keybay_dir(const keybay_host *host, int *fd, char *path, size_t size) {
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char base[4096];
    if (state && state[0] == '/') snprintf(base, sizeof base, "%s", state);
    else if (home && home[0] == '/') snprintf(base, sizeof base, "%s/.local/state", home);
    else return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "tpm2-pin: neither XDG_STATE_HOME nor HOME is an absolute path, so there is no "
                     "directory for the TPM's lock file");
    if ((size_t)snprintf(path, size, "%s/keybay", base) >= size) return fail(host, KEYBAY_ERR_IO, "tpm2-pin: %.64s... is too long", base);
    if (home && home[0] == '/' && !(state && state[0] == '/')) {
        char local[4200];
        snprintf(local, sizeof local, "%s/.local", home);
        if (mkdir(local, 0700) != 0 && errno != EEXIST) return keybay_rf_fail_errno(host, "tpm2-pin: cannot create", local);
    }
    if (mkdir(base, 0700) != 0 && errno != EEXIST) return keybay_rf_fail_errno(host, "tpm2-pin: cannot create", base);
    if (mkdir(path, 0700) != 0 && errno != EEXIST) return keybay_rf_fail_errno(host, "tpm2-pin: cannot create", path);
    *fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0) return keybay_rf_fail_errno(host, "tpm2-pin: cannot open", path);
    struct stat st;
    if (fstat(*fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        close(*fd);
        *fd = -1;
        return fail(host, KEYBAY_ERR_INSECURE, "tpm2-pin: %s is not a directory of this user's that only it may write", path);
    }
    return KEYBAY_OK;
}

static keybay_status tpm_open(const keybay_host *host, keybay_tpm2 *t) {
    keybay_status s = keybay_tpm2_begin(host, t, PLUGIN, USER);
    char path[4200];
    int dir = -1;
    if (s == KEYBAY_OK) s = open_keybay_dir(host, &dir, path, sizeof path);
    if (s == KEYBAY_OK) s = keybay_tpm2_lock(host, t, dir, path, 1);
    if (dir >= 0) close(dir);
    if (s == KEYBAY_OK) return keybay_tpm2_connect(host, t);
    keybay_tpm2_close(t);
    return s;
}

/* Asks for the PIN into `pin` (MAX_PIN + 1 bytes, guarded): 4 to 32 bytes, no NUL. */
static keybay_status ask_pin(const keybay_host *host, uint32_t flags, const char *prompt, int32_t retries, uint8_t *pin, size_t *length) {
    if (!KEYBAY_HOST_HAS(host, ask_secret)) return fail(host, KEYBAY_ERR_INTERACTION_UNAVAILABLE, "tpm2-pin: a PIN is needed but the host cannot ask for one");
    *length = 0;
    keybay_status s = host->ask_secret(host->context, KEYBAY_SECRET_PIN, flags, prompt, retries, pin, MAX_PIN + 1, length);
    if (s != KEYBAY_OK) { sodium_memzero(pin, MAX_PIN + 1); return s; } /* the host's status, as is */
    if (*length > MAX_PIN + 1) { sodium_memzero(pin, MAX_PIN + 1); return fail(host, KEYBAY_ERR_INTERNAL, "tpm2-pin: the host reported more bytes than the buffer holds"); }
    if (*length < MIN_PIN || *length > MAX_PIN || memchr(pin, 0, *length)) {
        size_t n = *length;
        sodium_memzero(pin, MAX_PIN + 1);
        *length = 0;
        /* A new PIN out of bounds is the user's choice to redo; an old one cannot be right. */
        return fail(host, flags & KEYBAY_ASK_NEW ? KEYBAY_ERR_INVALID_OPTION : KEYBAY_ERR_WRONG_SECRET,
                    "tpm2-pin: a PIN is %d to %d bytes without a NUL byte (this one: %s%zu bytes)", MIN_PIN, MAX_PIN,
                    n > MAX_PIN ? "more than " : "", n > MAX_PIN ? (size_t)MAX_PIN : n);
    }
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- method operations */

/* Usable here: keybay_tpm2_probe (the TPM itself is not reached; probe never blocks for long). */
static keybay_status probe(const keybay_host *host) { return keybay_tpm2_probe(host, PLUGIN, USER); }

static keybay_status enroll(const keybay_host *host, const keybay_option *options, size_t option_count, keybay_buffer *params_out,
                            uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status s = keybay_method_enroll_begin(host, PLUGIN, params_out, secret_out);
    uint32_t pcrs = 0;
    const char *public_key = NULL, *signature = NULL;
    if (s == KEYBAY_OK) s = keybay_tpm2_parse_policy_options(host, PLUGIN, options, option_count, &pcrs, NULL, &public_key, &signature);
    if (s != KEYBAY_OK) return s;
    TPM2B_SENSITIVE_CREATE *sensitive = keybay_method_secret_new(host, PLUGIN, sizeof *sensitive);
    sealed_object *o = malloc(sizeof *o);
    if (!sensitive || !o) { keybay_method_secret_free(sensitive, sizeof *sensitive); free(o); return sensitive ? fail(host, KEYBAY_ERR_INTERNAL, "tpm2-pin: out of memory") : KEYBAY_ERR_INTERNAL; }
    memset(o, 0, sizeof *o);
    o->pcrs = pcrs;
    size_t length = 0;
    /* The PIN first: a refused prompt costs no TPM work, and the TPM is not held while it is typed. */
    s = ask_pin(host, KEYBAY_ASK_NEW, "New PIN for the TPM", -1, sensitive->sensitive.userAuth.buffer, &length);
    sensitive->sensitive.userAuth.size = (UINT16)length;
    keybay_tpm2 t;
    memset(&t, 0, sizeof t);
    t.lock = -1;
    if (s == KEYBAY_OK) s = tpm_open(host, &t);
    if (s == KEYBAY_OK && public_key && (s = keybay_tpm2_signing_key_from_pem(host, public_key, &o->key)) == KEYBAY_OK) {
        o->has_signed = 1;
        if (signature) snprintf(o->signature_path, sizeof o->signature_path, "%s", signature);
    }
    if (s == KEYBAY_OK) {
        sensitive->sensitive.data.size = KEYBAY_METHOD_SECRET_BYTES;
        randombytes_buf(sensitive->sensitive.data.buffer, KEYBAY_METHOD_SECRET_BYTES);
        s = keybay_tpm2_seal_with_auth(host, &t, pcrs, o->has_signed ? &o->key : NULL, sensitive, &o->public, &o->private);
    }
    if (s == KEYBAY_OK) s = encode_params(host, o, params_out);
    if (s == KEYBAY_OK) memcpy(secret_out, sensitive->sensitive.data.buffer, KEYBAY_METHOD_SECRET_BYTES);
    keybay_tpm2_close(&t);
    keybay_method_secret_free(sensitive, sizeof *sensitive);
    free(o);
    return s;
}

/* Unseals M with `pin` in a policy session salted with the primary (M comes back encrypted). */
static keybay_status unseal(const keybay_host *host, keybay_tpm2 *t, const sealed_object *o, const uint8_t *pin, size_t pin_length,
                            uint8_t *secret_out) {
    keybay_tpm2_session *session = keybay_method_secret_new(host, PLUGIN, sizeof *session);
    if (!session) return KEYBAY_ERR_INTERNAL;
    TSS2_RC rc = TSS2_RC_SUCCESS;
    int loaded = 0;
    keybay_status s = KEYBAY_OK;
    /* A signed policy: the signature that approves the PCR values now, verified, or pcr-mismatch. */
    uint8_t now[KEYBAY_TPM2_PCRS][32], approved[32];
    TPMT_TK_VERIFIED *ticket = NULL;
    if (o->has_signed) {
        s = keybay_tpm2_read_pcrs(host, t, o->pcrs, now);
        if (s == KEYBAY_OK) keybay_tpm2_pcr_policy(o->pcrs, (const uint8_t (*)[32])now, approved);
        if (s == KEYBAY_OK) s = keybay_tpm2_signed_ticket(host, t, &o->key, o->signature_path, o->pcrs, approved, &ticket);
        if (s == KEYBAY_OK && !ticket) {
            keybay_host_error_reason(host, "pcr-mismatch");
            keybay_host_error_pcrs(host, o->pcrs);
            s = fail(host, KEYBAY_ERR_NOT_AVAILABLE, "tpm2-pin: no signature approves the values the PCRs this method is bound to (mask 0x%06x) "
                     "hold now; another method must open the store", (unsigned)o->pcrs);
        }
    }
    keybay_tpm2_approval approval = { &o->key, approved, ticket };
    if (s == KEYBAY_OK)
        s = keybay_tpm2_unseal_with_auth(host, t, &o->public, &o->private, o->pcrs, o->has_signed ? &approval : NULL, pin, pin_length, session,
                                         &rc, &loaded);
    if (ticket) T(Esys_Free)(ticket);
    TSS2_RC base = keybay_tpm2_rc_base(rc);
    if (s == KEYBAY_OK && session->unsealed_length == KEYBAY_METHOD_SECRET_BYTES) {
        memcpy(secret_out, session->unsealed, KEYBAY_METHOD_SECRET_BYTES);
    } else if (s == KEYBAY_OK) {
        s = fail(host, KEYBAY_ERR_MALFORMED_PARAMS, "tpm2-pin: the sealed object holds %zu bytes, not a method secret", session->unsealed_length);
    } else if (rc == TSS2_RC_SUCCESS) {
        /* explained already (the primary, the session) */
    } else if (!loaded && keybay_tpm2_rc_is_tpm(rc) && (rc & TPM2_RC_FMT1)) {
        /* A foreign or damaged object is a format-one error on its parameters (integrity, size, key). */
        keybay_host_error_reason(host, "foreign-object");
        s = fail(host, KEYBAY_ERR_NOT_AVAILABLE, "tpm2-pin: %s cannot load this method's sealed object: it was sealed by another "
                 "machine's TPM, or this TPM was cleared since (%s); the method cannot be used here, and another method must open the store",
                 t->where, T(Tss2_RC_Decode)(rc));
    } else if (!loaded) {
        s = keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "tpm2-pin: cannot load the method's sealed object");
    } else if (keybay_tpm2_is_auth_refusal(rc)) {
        s = keybay_tpm2_auth_refused(host, t, rc, "wrong-pin", "PIN");
    } else if (keybay_tpm2_rc_is_tpm(rc) && base == TPM2_RC_POLICY_FAIL) {
        keybay_host_error_reason(host, "pcr-mismatch");
        keybay_host_error_pcrs(host, o->pcrs);
        s = fail(host, KEYBAY_ERR_NOT_AVAILABLE, "tpm2-pin: the PCRs this method is bound to (mask 0x%06x, SHA-256) no longer hold the "
                 "values it was sealed to (a firmware, boot loader or Secure Boot change); another method must open the store", (unsigned)o->pcrs);
    } else {
        s = keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "tpm2-pin: cannot unseal the method's secret");
    }
    keybay_method_secret_free(session, sizeof *session);
    return s;
}

static keybay_status unwrap(const keybay_host *host, const uint8_t *params, size_t params_length, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status s = keybay_method_unwrap_begin(host, PLUGIN, secret_out);
    if (s != KEYBAY_OK) return s;
    sealed_object *o = malloc(sizeof *o);
    if (!o) return fail(host, KEYBAY_ERR_INTERNAL, "tpm2-pin: out of memory");
    /* The parameters first: a malformed one costs no TPM and no prompt. */
    keybay_tpm2 t;
    s = keybay_tpm2_begin(host, &t, PLUGIN, USER);
    keybay_tpm2_close(&t);
    if (s == KEYBAY_OK) s = decode_params(host, params, params_length, o);
    /* The tries left, read before asking; the TPM is let go while the user types. */
    keybay_tpm2_lockout l = { 0 };
    if (s == KEYBAY_OK && (s = tpm_open(host, &t)) == KEYBAY_OK) {
        s = keybay_tpm2_read_lockout(host, &t, &l);
        if (s == KEYBAY_OK && keybay_tpm2_tries_left(&l) == 0) s = keybay_tpm2_locked_out(host, &t, &l);
        keybay_tpm2_close(&t);
    }
    uint8_t *pin = s == KEYBAY_OK ? keybay_method_secret_new(host, PLUGIN, MAX_PIN + 1) : NULL;
    if (s == KEYBAY_OK && !pin) s = KEYBAY_ERR_INTERNAL;
    size_t length = 0;
    if (s == KEYBAY_OK) s = ask_pin(host, 0, "PIN for the TPM", keybay_tpm2_tries_left(&l), pin, &length);
    if (s == KEYBAY_OK && (s = tpm_open(host, &t)) == KEYBAY_OK) {
        s = unseal(host, &t, o, pin, length, secret_out);
        keybay_tpm2_close(&t);
    }
    if (s != KEYBAY_OK) sodium_memzero(secret_out, KEYBAY_METHOD_SECRET_BYTES);
    keybay_method_secret_free(pin, MAX_PIN + 1);
    free(o);
    return s;
}

static keybay_status describe(const keybay_host *host, const uint8_t *params, size_t params_length, keybay_buffer *text_out) {
    keybay_status s = keybay_method_describe_begin(text_out);
    uint32_t pcrs = 0;
    const uint8_t *parts[4];
    size_t lengths[4];
    if (s == KEYBAY_OK) s = split_params(host, params, params_length, &pcrs, parts, lengths);
    if (s != KEYBAY_OK) return s;
    char text[200];
    int n = snprintf(text, sizeof text, "PIN sealed by this machine's TPM");
    if (pcrs) {
        n += snprintf(text + n, sizeof text - (size_t)n, parts[2] ? ", bound to PCR values signed by a key for PCRs" : ", bound to PCRs");
        const char *separator = " ";
        for (int i = 0; i < 24; i++)
            if (pcrs & (1u << i)) { n += snprintf(text + n, sizeof text - (size_t)n, "%s%d", separator, i); separator = ","; }
    }
    if (keybay_method_text(text, (size_t)n, text_out) != KEYBAY_OK) return fail(host, KEYBAY_ERR_INTERNAL, "tpm2-pin: out of memory");
    return KEYBAY_OK;
}

static const keybay_option_spec option_specs[] = {
    { "pcrs", "also bind the secret to PCRs of the SHA-256 bank at their current values, e.g. 7 (Secure Boot) or 0,7; a change "
              "of any makes the method unusable" },
    { "pcr-public-key", "bind the secret to the PCR values this PEM public key (RSA-2048 or EC P-256) signs (systemd-measure; PCR 11 "
                        "unless pcrs= says otherwise) instead of their current values" },
    { "pcr-signature", "the signature file to read (systemd-measure's JSON); default: the first of /run/systemd/tpm2-pcr-signature.json "
                       "and /usr/lib/systemd/tpm2-pcr-signature.json" },
};

static const keybay_plugin descriptor = {
    KEYBAY_DESCRIPTOR(PLUGIN, "TPM 2.0 PIN (unsealed by this machine's TPM, with lockout)", "1.0.0", KEYBAY_KIND_METHOD,
                      KEYBAY_FLAG_INTERACTIVE | KEYBAY_FLAG_NEEDS_DEVICE | KEYBAY_FLAG_ONE_PER_STORE),
    KEYBAY_DESCRIPTOR_OPTIONS(option_specs),
    .free_buffer = keybay_method_free_buffer,
    KEYBAY_METHOD_OPERATIONS(),
};

KEYBAY_PLUGIN_ENTRY_AFTER_SODIUM(descriptor)
