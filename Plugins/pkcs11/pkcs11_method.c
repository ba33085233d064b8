// SPDX-License-Identifier: Apache-2.0
/*
 * The `pkcs11` method (Keybay plugin ABI v1): M is protected by a key on a PKCS#11 token (a smart
 * card, an HSM, SoftHSM), unlocked with the token's PIN. docs/pkcs11.md specifies the
 * parameters, the HKDF context, the options and every error.
 * - RSA: M is random, encrypted with RSA-OAEP (SHA-256) to the token's public key; unwrap is
 *   C_Decrypt on the token.
 * - EC (P-256): an ECDH of an ephemeral key with the token's key; the parameters keep the
 *   ephemeral public point and M = HKDF-SHA256(shared x, context naming the method and both points).
 * Enroll runs the unwrap side once before it answers, so an enrollment that would not open again
 * (a key that may not decrypt or derive) fails at enroll, not at the next unlock.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "keybay_plugin_descriptor.h"
#include "keybay_plugin_host.h"
#include "pkcs11_params.h"
#include "pkcs11_token.h"

#define P11_PLUGIN "pkcs11"
/* The HKDF info's fixed prefix (docs/pkcs11.md, "EC keys"). */
#define P11_HKDF_CONTEXT "keybay-pkcs11 ecdh-p256 v1"

/* ---------------------------------------------------------------- HKDF-SHA256 (RFC 5869) */

/* One 32-byte block of HKDF-SHA256 with the default salt (32 zero bytes): libsodium 1.0.18 has
   HMAC-SHA256 but no HKDF. */
static void p11_hkdf(const uint8_t ikm[32], const uint8_t token_point[P11_POINT_BYTES],
                     const uint8_t ephemeral_point[P11_POINT_BYTES], uint8_t out[KEYBAY_METHOD_SECRET_BYTES]) {
    static const uint8_t salt[32];
    static const uint8_t counter = 1;
    uint8_t prk[32];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, salt, sizeof salt);
    crypto_auth_hmacsha256_update(&st, ikm, 32);
    crypto_auth_hmacsha256_final(&st, prk);
    crypto_auth_hmacsha256_init(&st, prk, sizeof prk);
    crypto_auth_hmacsha256_update(&st, (const uint8_t *)P11_HKDF_CONTEXT, sizeof P11_HKDF_CONTEXT - 1);
    crypto_auth_hmacsha256_update(&st, token_point, P11_POINT_BYTES);
    crypto_auth_hmacsha256_update(&st, ephemeral_point, P11_POINT_BYTES);
    crypto_auth_hmacsha256_update(&st, &counter, 1);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(prk, sizeof prk);
    sodium_memzero(&st, sizeof st);
}

/* ---------------------------------------------------------------- one operation's state */

/* Guarded memory for the secrets of one operation. */
typedef struct p11_secret {
    uint8_t m[KEYBAY_METHOD_SECRET_BYTES];
    uint8_t shared[2][32];
    uint8_t scratch[2 * P11_MAX_RSA_BYTES]; /* RSA decryption and OAEP decoding */
    uint8_t check[KEYBAY_METHOD_SECRET_BYTES];
    uint8_t pin[P11_MAX_PIN + 1]; /* here rather than in an allocation of its own: each costs several system calls */
} p11_secret;

typedef struct p11_operation {
    p11_modules modules;
    p11_token token;
    P11KitUri *uri;
    p11_secret *secret;
    p11_params params; /* 2.4 KiB: here, not on the stack */
} p11_operation;

static p11_operation *p11_operation_new(const keybay_host *host) {
    p11_operation *op = calloc(1, sizeof *op);
    if (op == NULL) {
        keybay_host_error(host, "pkcs11: out of memory");
        return NULL;
    }
    op->secret = keybay_method_secret_new(host, P11_PLUGIN, sizeof *op->secret);
    if (op->secret == NULL) {
        free(op);
        return NULL;
    }
    return op;
}

static void p11_operation_free(p11_operation *op) {
    if (op == NULL) return;
    p11_session_close(&op->token);
    p11_modules_close(&op->modules);
    p11_uri_free(op->uri);
    keybay_method_secret_free(op->secret, sizeof *op->secret);
    sodium_memzero(op, sizeof *op);
    free(op);
}

/* ---------------------------------------------------------------- probe */

static keybay_status p11_probe(const keybay_host *host) {
    return p11_library_init(host, 1);
}

/* ---------------------------------------------------------------- enroll */

static const keybay_option_spec p11_options[] = {
    {"token", "the token and its key, an RFC 7512 URI: pkcs11:token=LABEL;id=%01 (required)"},
    {"module", "the PKCS#11 module to use, an absolute path (default: p11-kit's configured modules)"},
};

static keybay_status p11_read_options(const keybay_host *host, const keybay_option *options, size_t count,
                                      const char **token, const char **module) {
    *token = NULL;
    *module = "";
    for (size_t i = 0; i < count; i++) {
        const char *name = options[i].name, *value = options[i].value;
        if (name == NULL || value == NULL) {
            keybay_host_error(host, "pkcs11: an option without a name or value");
            return KEYBAY_ERR_INVALID_OPTION;
        }
        if (strcmp(name, "token") == 0) {
            *token = value;
        } else if (strcmp(name, "module") == 0) {
            if (value[0] != '/' || strlen(value) > P11_MAX_MODULE_PATH) {
                keybay_host_error(host, "pkcs11: option module must be an absolute path of at most %u bytes", P11_MAX_MODULE_PATH);
                return KEYBAY_ERR_INVALID_OPTION;
            }
            if (access(value, R_OK) != 0) {
                keybay_host_error(host, "pkcs11: option module names %s, which cannot be read", value);
                return KEYBAY_ERR_INVALID_OPTION;
            }
            *module = value;
        } else {
            keybay_host_error(host, "pkcs11: unknown option '%.64s' (it takes token and module)", name);
            return KEYBAY_ERR_INVALID_OPTION;
        }
    }
    if (*token == NULL) {
        keybay_host_error(host, "pkcs11: option token is required: --opt token=pkcs11:token=LABEL;id=%%01");
        return KEYBAY_ERR_INVALID_OPTION;
    }
    return KEYBAY_OK;
}

/* The private key the URI names (its id and label), its key type and its public half. */
static keybay_status p11_enrolled_key(const keybay_host *host, p11_operation *op, CK_OBJECT_HANDLE *private_key,
                                      CK_OBJECT_HANDLE *public_key, CK_KEY_TYPE *type) {
    p11_token *t = &op->token;
    int found = p11_find_object(host, t, CKO_PRIVATE_KEY, (CK_KEY_TYPE)-1, p11_uri_attribute(op->uri, CKA_ID),
                                p11_uri_attribute(op->uri, CKA_LABEL), private_key);
    if (found < 0) return KEYBAY_ERR_NOT_AVAILABLE;
    if (found > 0) {
        keybay_host_error(host, found == 1 ? "pkcs11: the token '%s' has no private key matching option token (id=, object= in the URI)"
                                           : "pkcs11: several private keys on the token '%s' match option token; name one (id=, object= in the URI)",
                          t->name);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    if (p11_attribute(host, t, *private_key, CKA_KEY_TYPE, type, sizeof *type, "the key's type") < 0) return KEYBAY_ERR_UNSUPPORTED;
    if (*type != CKK_RSA && *type != CKK_EC) {
        keybay_host_error(host, "pkcs11: the key on the token '%s' is neither RSA nor EC", t->name);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    long id_length = p11_attribute(host, t, *private_key, CKA_ID, op->params.id, P11_MAX_ID, "the key's id (CKA_ID)");
    if (id_length < 0) return KEYBAY_ERR_UNSUPPORTED;
    if (id_length == 0) {
        keybay_host_error(host, "pkcs11: the key on the token '%s' has no id (CKA_ID), which unlock needs to find it again", t->name);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    op->params.id_length = (uint8_t)id_length;
    /* Unlock finds the key by its id alone: another private key with the same id would be ambiguous. */
    CK_ATTRIBUTE id = {CKA_ID, op->params.id, (CK_ULONG)id_length};
    CK_OBJECT_HANDLE again;
    if (p11_find_object(host, t, CKO_PRIVATE_KEY, *type, &id, NULL, &again) != 0) {
        keybay_host_error(host, "pkcs11: several private keys on the token '%s' share the key's id (CKA_ID); unlock could not tell them apart", t->name);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    found = p11_find_object(host, t, CKO_PUBLIC_KEY, *type, &id, NULL, public_key);
    if (found != 0) {
        if (found > 0)
            keybay_host_error(host, "pkcs11: the token '%s' has %s public key with the key's id (CKA_ID); enroll needs exactly one",
                              t->name, found == 1 ? "no" : "more than one");
        return KEYBAY_ERR_UNSUPPORTED;
    }
    return KEYBAY_OK;
}

static keybay_status p11_enroll_rsa(const keybay_host *host, p11_operation *op, CK_OBJECT_HANDLE private_key, CK_OBJECT_HANDLE public_key) {
    p11_token *t = &op->token;
    uint8_t modulus[P11_MAX_RSA_BYTES + 1];
    long bytes = p11_attribute(host, t, public_key, CKA_MODULUS, modulus, sizeof modulus, "the RSA key's modulus");
    if (bytes < 0) return KEYBAY_ERR_UNSUPPORTED;
    if (bytes < (long)P11_MIN_RSA_BYTES || bytes > (long)P11_MAX_RSA_BYTES) {
        keybay_host_error(host, "pkcs11: the RSA key on the token '%s' has %ld bits; this method takes 2048 to 8192", t->name, bytes * 8);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    op->params.kind = P11_KIND_RSA_OAEP;
    op->params.ciphertext_length = (uint16_t)bytes;
    randombytes_buf(op->secret->m, sizeof op->secret->m);
    keybay_status status = p11_rsa_oaep_encrypt(host, t, public_key, (size_t)bytes, op->secret->m, op->params.ciphertext, &op->params.rsa_padding);
    if (status != KEYBAY_OK) return status;
    status = p11_rsa_oaep_decrypt(host, t, private_key, op->params.rsa_padding, op->params.ciphertext, (size_t)bytes,
                                  op->secret->scratch, op->secret->check);
    if (status != KEYBAY_OK) return status;
    if (sodium_memcmp(op->secret->check, op->secret->m, sizeof op->secret->m) != 0) {
        keybay_host_error(host, "pkcs11: the token '%s' decrypted its own RSA-OAEP ciphertext to something else", t->name);
        return KEYBAY_ERR_INTERNAL;
    }
    return KEYBAY_OK;
}

static keybay_status p11_enroll_ec(const keybay_host *host, p11_operation *op, CK_OBJECT_HANDLE private_key, CK_OBJECT_HANDLE public_key) {
    p11_token *t = &op->token;
    op->params.kind = P11_KIND_ECDH_P256;
    keybay_status status = p11_ec_public_point(host, t, public_key, op->params.token_point);
    if (status != KEYBAY_OK) return status;
    CK_OBJECT_HANDLE ephemeral;
    status = p11_ec_ephemeral(host, t, &ephemeral, op->params.ephemeral_point);
    if (status != KEYBAY_OK) return status;
    status = p11_ecdh(host, t, ephemeral, op->params.token_point, op->secret->shared[0]);
    t->f->C_DestroyObject(t->session, ephemeral); /* the ephemeral private key never outlives enroll */
    if (status != KEYBAY_OK) return status;
    status = p11_ecdh(host, t, private_key, op->params.ephemeral_point, op->secret->shared[1]);
    if (status != KEYBAY_OK) return status;
    if (sodium_memcmp(op->secret->shared[0], op->secret->shared[1], 32) != 0) {
        keybay_host_error(host, "pkcs11: the token '%s' derived two different ECDH secrets for one key pair", t->name);
        return KEYBAY_ERR_INTERNAL;
    }
    p11_hkdf(op->secret->shared[1], op->params.token_point, op->params.ephemeral_point, op->secret->m);
    return KEYBAY_OK;
}

static keybay_status p11_enroll_with(const keybay_host *host, p11_operation *op, const keybay_option *options, size_t count,
                                     keybay_buffer *params_out) {
    const char *token_uri, *module;
    keybay_status status = p11_read_options(host, options, count, &token_uri, &module);
    if (status == KEYBAY_OK) status = p11_library_init(host, 1); /* the URI parser is p11-kit's */
    if (status == KEYBAY_OK) status = p11_uri_parse(host, token_uri, &op->uri);
    if (status != KEYBAY_OK) return status;
    snprintf(op->params.module, sizeof op->params.module, "%s", module);
    if ((status = p11_modules_open(host, module, &op->modules)) != KEYBAY_OK) return status;
    if ((status = p11_token_by_uri(host, &op->modules, op->uri, &op->token)) != KEYBAY_OK) return status;
    memcpy(op->params.label, op->token.info.label, P11_LABEL_BYTES);
    memcpy(op->params.serial, op->token.info.serialNumber, P11_SERIAL_BYTES);
    if ((status = p11_session_login(host, &op->token, op->secret->pin)) != KEYBAY_OK) return status;
    CK_OBJECT_HANDLE private_key, public_key;
    CK_KEY_TYPE type;
    if ((status = p11_enrolled_key(host, op, &private_key, &public_key, &type)) != KEYBAY_OK) return status;
    status = type == CKK_RSA ? p11_enroll_rsa(host, op, private_key, public_key) : p11_enroll_ec(host, op, private_key, public_key);
    if (status != KEYBAY_OK) return status;
    size_t size = p11_params_size(&op->params);
    params_out->data = malloc(size);
    if (params_out->data == NULL) {
        keybay_host_error(host, "pkcs11: out of memory");
        return KEYBAY_ERR_INTERNAL;
    }
    p11_params_encode(&op->params, params_out->data);
    params_out->length = size;
    return KEYBAY_OK;
}

static keybay_status p11_enroll(const keybay_host *host, const keybay_option *options, size_t option_count,
                                keybay_buffer *params_out, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status status = keybay_method_enroll_begin(host, P11_PLUGIN, params_out, secret_out);
    if (status != KEYBAY_OK) return status;
    p11_operation *op = p11_operation_new(host);
    if (op == NULL) return KEYBAY_ERR_INTERNAL;
    status = p11_enroll_with(host, op, options, option_count, params_out);
    if (status == KEYBAY_OK) memcpy(secret_out, op->secret->m, KEYBAY_METHOD_SECRET_BYTES);
    else keybay_method_free_buffer(params_out);
    p11_operation_free(op);
    return status;
}

/* ---------------------------------------------------------------- unwrap */

static keybay_status p11_unwrap_with(const keybay_host *host, p11_operation *op) {
    p11_params *p = &op->params;
    keybay_status status = p11_library_init(host, p->module[0] == '\0');
    if (status != KEYBAY_OK) return status;
    if ((status = p11_modules_open(host, p->module, &op->modules)) != KEYBAY_OK) return status;
    if ((status = p11_token_by_identity(host, &op->modules, p->label, p->serial, &op->token)) != KEYBAY_OK) return status;
    if ((status = p11_session_login(host, &op->token, op->secret->pin)) != KEYBAY_OK) return status;
    p11_token *t = &op->token;
    CK_ATTRIBUTE id = {CKA_ID, p->id, p->id_length};
    CK_OBJECT_HANDLE key;
    int found = p11_find_object(host, t, CKO_PRIVATE_KEY, p->kind == P11_KIND_RSA_OAEP ? CKK_RSA : CKK_EC, &id, NULL, &key);
    if (found < 0) return KEYBAY_ERR_NOT_AVAILABLE;
    if (found > 0) {
        keybay_host_error(host, found == 1 ? "pkcs11: the token '%s' no longer holds this method's %s key (was it deleted?)"
                                           : "pkcs11: the token '%s' holds several %s keys with this method's key id; unlock cannot tell them apart",
                          t->name, p->kind == P11_KIND_RSA_OAEP ? "RSA" : "EC");
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (p->kind == P11_KIND_ECDH_P256) {
        if ((status = p11_ecdh(host, t, key, p->ephemeral_point, op->secret->shared[0])) != KEYBAY_OK) return status;
        p11_hkdf(op->secret->shared[0], p->token_point, p->ephemeral_point, op->secret->m);
        return KEYBAY_OK;
    }
    return p11_rsa_oaep_decrypt(host, t, key, p->rsa_padding, p->ciphertext, p->ciphertext_length, op->secret->scratch, op->secret->m);
}

static keybay_status p11_unwrap(const keybay_host *host, const uint8_t *params, size_t params_length,
                                uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status status = keybay_method_unwrap_begin(host, P11_PLUGIN, secret_out);
    if (status != KEYBAY_OK) return status;
    p11_operation *op = p11_operation_new(host);
    if (op == NULL) return KEYBAY_ERR_INTERNAL;
    const char *why = NULL;
    if (p11_params_decode(params, params_length, &op->params, &why) != 0) {
        keybay_host_error(host, "pkcs11: the stored parameters (%zu bytes) do not decode: %s", params_length, why);
        status = KEYBAY_ERR_MALFORMED_PARAMS;
    } else {
        status = p11_unwrap_with(host, op);
        if (status == KEYBAY_OK) memcpy(secret_out, op->secret->m, KEYBAY_METHOD_SECRET_BYTES);
    }
    p11_operation_free(op);
    return status;
}

/* ---------------------------------------------------------------- describe */

static keybay_status p11_describe(const keybay_host *host, const uint8_t *params, size_t params_length, keybay_buffer *text_out) {
    keybay_status status = keybay_method_describe_begin(text_out);
    if (status != KEYBAY_OK) return status;
    p11_params *p = calloc(1, sizeof *p);
    if (p == NULL) return KEYBAY_ERR_INTERNAL;
    const char *why = NULL;
    if (p11_params_decode(params, params_length, p, &why) != 0) {
        keybay_host_error(host, "pkcs11: the stored parameters (%zu bytes) do not decode: %s", params_length, why);
        free(p);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    char name[P11_LABEL_BYTES + 1];
    p11_label_text(p->label, name);
    char id[2 * 16 + 4] = "";
    for (size_t i = 0; i < p->id_length && i < 16; i++) snprintf(id + 2 * i, 3, "%02x", p->id[i]);
    if (p->id_length > 16) strcat(id, "...");
    char text[P11_MAX_MODULE_PATH + 200];
    char key[32];
    if (p->kind == P11_KIND_RSA_OAEP) snprintf(key, sizeof key, "RSA-%u OAEP", (unsigned)p->ciphertext_length * 8u);
    else snprintf(key, sizeof key, "EC P-256 ECDH");
    int length = snprintf(text, sizeof text, "%s key id %s on the token '%s' (%s)", key, id, name,
                          p->module[0] != '\0' ? p->module : "p11-kit's modules");
    free(p);
    return keybay_method_text(text, (size_t)length < sizeof text ? (size_t)length : sizeof text - 1, text_out);
}

/* ---------------------------------------------------------------- descriptor */

static const keybay_plugin p11_descriptor = {
    KEYBAY_DESCRIPTOR("pkcs11", "PKCS#11 token (smart card, HSM)", "1", KEYBAY_KIND_METHOD,
                      KEYBAY_FLAG_INTERACTIVE | KEYBAY_FLAG_NEEDS_DEVICE),
    KEYBAY_DESCRIPTOR_OPTIONS(p11_options),
    .free_buffer = keybay_method_free_buffer,
    KEYBAY_METHOD_OPERATIONS(p11_),
};

KEYBAY_PLUGIN_ENTRY(p11_descriptor)
