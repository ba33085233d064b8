// SPDX-License-Identifier: Apache-2.0
/*
 * The PKCS#11 side of the pkcs11 method: p11-kit opened on first use, the modules (p11-kit's list
 * or one named module), the token and key an enrollment names, the PIN and C_Login, and the
 * token's mechanisms the method uses. No Keybay format here (pkcs11_params.h).
 */
#ifndef KEYBAY_PKCS11_TOKEN_H
#define KEYBAY_PKCS11_TOKEN_H

#include <p11-kit/pkcs11.h>
#include <p11-kit/uri.h>

#include "keybay_plugin.h"
#include "pkcs11_params.h"

#define P11_MAX_PIN 255u

/* Linked into the plugin, exported by none (a plugin exports its entry point only). */
#pragma GCC visibility push(hidden)

/* The modules of one operation: loaded and initialised by p11_modules_open, released by
   p11_modules_close. */
typedef struct p11_modules {
    CK_FUNCTION_LIST **list;      /* NULL-terminated: the modules in use */
    CK_FUNCTION_LIST **loaded;    /* p11-kit's: every module it loaded, released at the end */
    CK_FUNCTION_LIST *single[2];  /* the list when one module was named */
    int from_p11kit;
    int finalize_single;          /* we initialised the named module, so we finalise it */
    char where[P11_MAX_MODULE_PATH + 32]; /* "the module PATH" or "p11-kit's modules", for messages */
} p11_modules;

/* A token in a slot of one of the modules, with an open session once p11_session_open ran. */
typedef struct p11_token {
    CK_FUNCTION_LIST *f;
    CK_SLOT_ID slot;
    CK_TOKEN_INFO info;
    CK_SESSION_HANDLE session;
    int has_session;
    char name[P11_LABEL_BYTES + 1]; /* the label without its padding, for messages */
} p11_token;

/* Starts libsodium and, with `p11kit`, loads p11-kit (once): NOT_AVAILABLE when libp11-kit.so.0
   is missing. An unlock through a named module needs no p11-kit, and does not map it. */
keybay_status p11_library_init(const keybay_host *host, int p11kit);

/* Parses an RFC 7512 URI of a token and its key; INVALID_OPTION, explained, when it is not one,
   holds attributes p11-kit does not know, or carries a PIN. */
keybay_status p11_uri_parse(const keybay_host *host, const char *text, P11KitUri **uri_out);
void p11_uri_free(P11KitUri *uri);
/* The URI's CKA_ID and CKA_LABEL, when it has them (NULL otherwise). */
CK_ATTRIBUTE *p11_uri_attribute(P11KitUri *uri, CK_ATTRIBUTE_TYPE type);

/* module_path "" = p11-kit's list, without its trust-policy modules (certificates, never a key).
   NOT_AVAILABLE when the module cannot be loaded or initialised. */
keybay_status p11_modules_open(const keybay_host *host, const char *module_path, p11_modules *m);
void p11_modules_close(p11_modules *m);

/* The one present token that `uri` matches: NOT_AVAILABLE for none, INVALID_OPTION for several. */
keybay_status p11_token_by_uri(const keybay_host *host, p11_modules *m, P11KitUri *uri, p11_token *out);
/* The present token with this label and serial number (the first one): NOT_AVAILABLE for none. */
keybay_status p11_token_by_identity(const keybay_host *host, p11_modules *m, const uint8_t label[P11_LABEL_BYTES],
                                    const uint8_t serial[P11_SERIAL_BYTES], p11_token *out);

/* Opens a read-only session, asks for the user PIN (LOCKED first if the token says so) into
   `pin` (the operation's guarded memory, wiped after the login) and logs in: WRONG_SECRET with
   the tries left when the token reports them, LOCKED, or what ask_secret said. */
keybay_status p11_session_login(const keybay_host *host, p11_token *t, uint8_t pin[P11_MAX_PIN + 1]);
void p11_session_close(p11_token *t);
/* A failure of the token, mapped to a status with one line naming what failed. */
keybay_status p11_failure(const keybay_host *host, p11_token *t, CK_RV rv, const char *what);

/* The one object of `class` with these attributes (id and/or label; `key_type` when not
   (CK_KEY_TYPE)-1): 0 found, 1 none, 2 several, -1 the token failed (explained). */
int p11_find_object(const keybay_host *host, p11_token *t, CK_OBJECT_CLASS klass, CK_KEY_TYPE key_type,
                    const CK_ATTRIBUTE *id, const CK_ATTRIBUTE *label, CK_OBJECT_HANDLE *out);
/* One attribute into `out` (capacity bytes); its length, or -1 (explained as `what`). */
long p11_attribute(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type,
                   void *out, size_t capacity, const char *what);

/* RSA-OAEP (SHA-256, MGF1-SHA-256, empty label) of a 32-byte message to the public key of `k`
   bytes of modulus: CKM_RSA_PKCS_OAEP on the token, or, when the token refuses SHA-256 with it,
   the padding made here and CKM_RSA_X_509 on the token (`*padding_out` says which). */
keybay_status p11_rsa_oaep_encrypt(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE public_key, size_t k,
                                   const uint8_t message[32], uint8_t *out, uint8_t *padding_out);
/* Decrypts `k` bytes with the private key, the padding removed where `padding` says, into the
   32-byte message; NOT_AVAILABLE when the result is not one (another key). `scratch`: 2 *
   P11_MAX_RSA_BYTES bytes of guarded memory, wiped. */
keybay_status p11_rsa_oaep_decrypt(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE private_key, uint8_t padding,
                                   const uint8_t *cipher, size_t k, uint8_t *scratch, uint8_t message[32]);
/* A P-256 key pair made on the token as session objects (gone when the session closes). */
keybay_status p11_ec_ephemeral(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE *private_key,
                               uint8_t point[P11_POINT_BYTES]);
/* ECDH (CKD_NULL) of a private key on the token with a peer's point: the 32-byte shared x. */
keybay_status p11_ecdh(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE private_key,
                       const uint8_t peer[P11_POINT_BYTES], uint8_t shared[32]);
/* A P-256 public key's CKA_EC_PARAMS and CKA_EC_POINT checked and unwrapped to a raw point. */
keybay_status p11_ec_public_point(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE public_key,
                                  uint8_t point[P11_POINT_BYTES]);

#pragma GCC visibility pop

#endif
