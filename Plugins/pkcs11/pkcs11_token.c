// SPDX-License-Identifier: Apache-2.0
/*
 * PKCS#11 for the pkcs11 method: modules, tokens, the PIN, and the mechanisms. docs/pkcs11.md.
 *
 * Non-obvious choices:
 * - libp11-kit is not linked: it is opened on first use (p11_library_init), like every heavy
 *   library of a first-party plugin, so loading the plugin maps nothing but libc and libsodium;
 *   an unlock through a module named at enrollment never maps it.
 *   Its headers give the PKCS#11 and p11-kit types only.
 * - Every operation loads and initialises its modules and finalises them at the end: a token
 *   inserted since the last call is seen, and nothing of the module stays running in the host.
 * - The public-key half (RSA-OAEP encryption, the ephemeral EC key) runs on the token too, as
 *   session objects, so the plugin needs no crypto library of its own (docs/pkcs11.md, "Why the
 *   token does the public-key half").
 */
#define _POSIX_C_SOURCE 200809L

#include "pkcs11_token.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <p11-kit/p11-kit.h>

#include "keybay_lazy_library.h"
#include "keybay_plugin_host.h"

/* ---------------------------------------------------------------- libp11-kit, opened on first use */

#define P11_LIBRARY "libp11-kit.so.0"
#define P11_FUNCTIONS(X) \
    X(p11_kit_modules_load) \
    X(p11_kit_modules_initialize) \
    X(p11_kit_modules_finalize) \
    X(p11_kit_modules_release) \
    X(p11_kit_config_option) \
    X(p11_kit_uri_new) \
    X(p11_kit_uri_parse) \
    X(p11_kit_uri_free) \
    X(p11_kit_uri_message) \
    X(p11_kit_uri_any_unrecognized) \
    X(p11_kit_uri_match_token_info) \
    X(p11_kit_uri_match_module_info) \
    X(p11_kit_uri_get_attribute) \
    X(p11_kit_uri_get_pin_value) \
    X(p11_kit_uri_get_pin_source) \
    X(p11_kit_uri_get_module_name) \
    X(p11_kit_uri_get_module_path)

static struct {
    P11_FUNCTIONS(KEYBAY_LAZY_POINTER)
} p11_lib; /* filled only when every symbol resolved */
#define P11(name) (p11_lib.name)
KEYBAY_LAZY_LIBRARY(p11_library, P11_LIBRARY, RTLD_NOW, p11_lib, P11_FUNCTIONS, KEYBAY_LAZY_NAME);

static pthread_once_t p11_sodium_once = PTHREAD_ONCE_INIT;
static int p11_sodium_ok;

static void p11_sodium_start(void) {
    p11_sodium_ok = sodium_init() >= 0;
}

keybay_status p11_library_init(const keybay_host *host, int p11kit) {
    pthread_once(&p11_sodium_once, p11_sodium_start);
    const char *why = p11kit ? keybay_lazy_library_open(&p11_library) : NULL;
    if (why != NULL) {
        keybay_host_error(host, "pkcs11: cannot load " P11_LIBRARY " (%s); PKCS#11 tokens need p11-kit (Debian: libp11-kit0)", why);
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (!p11_sodium_ok) {
        keybay_host_error(host, "pkcs11: libsodium could not be initialised");
        return KEYBAY_ERR_INTERNAL;
    }
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- the URI */

keybay_status p11_uri_parse(const keybay_host *host, const char *text, P11KitUri **uri_out) {
    *uri_out = NULL;
    P11KitUri *uri = P11(p11_kit_uri_new)();
    if (uri == NULL) {
        keybay_host_error(host, "pkcs11: out of memory");
        return KEYBAY_ERR_INTERNAL;
    }
    int rc = P11(p11_kit_uri_parse)(text, P11_KIT_URI_FOR_OBJECT_ON_TOKEN_AND_MODULE, uri);
    const char *refusal = NULL;
    if (rc != P11_KIT_URI_OK) refusal = P11(p11_kit_uri_message)(rc);
    else if (P11(p11_kit_uri_any_unrecognized)(uri)) refusal = "it has attributes p11-kit does not know";
    else if (P11(p11_kit_uri_get_pin_value)(uri) != NULL || P11(p11_kit_uri_get_pin_source)(uri) != NULL)
        refusal = "it carries a PIN (pin-value, pin-source); the PIN is asked for at every unlock";
    else if (P11(p11_kit_uri_get_module_name)(uri) != NULL || P11(p11_kit_uri_get_module_path)(uri) != NULL)
        refusal = "it names a module (module-name, module-path); name it with --opt module=PATH";
    if (refusal != NULL) {
        /* The URI itself is not shown: a refused one may hold a PIN. */
        keybay_host_error(host, "pkcs11: option token is not a usable PKCS#11 URI (RFC 7512): %s", refusal);
        P11(p11_kit_uri_free)(uri);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    *uri_out = uri;
    return KEYBAY_OK;
}

void p11_uri_free(P11KitUri *uri) {
    if (uri != NULL) P11(p11_kit_uri_free)(uri);
}

CK_ATTRIBUTE *p11_uri_attribute(P11KitUri *uri, CK_ATTRIBUTE_TYPE type) {
    return P11(p11_kit_uri_get_attribute)(uri, type);
}

/* ---------------------------------------------------------------- modules */

keybay_status p11_modules_open(const keybay_host *host, const char *module_path, p11_modules *m) {
    memset(m, 0, sizeof *m);
    if (module_path[0] == '\0') {
        snprintf(m->where, sizeof m->where, "p11-kit's modules");
        m->loaded = P11(p11_kit_modules_load)(NULL, 0);
        if (m->loaded == NULL) {
            keybay_host_error(host, "pkcs11: p11-kit could not load its configured modules");
            return KEYBAY_ERR_NOT_AVAILABLE;
        }
        size_t count = 0;
        while (m->loaded[count] != NULL) count++;
        m->list = calloc(count + 1, sizeof *m->list);
        if (m->list == NULL) {
            P11(p11_kit_modules_release)(m->loaded);
            m->loaded = NULL;
            keybay_host_error(host, "pkcs11: out of memory");
            return KEYBAY_ERR_INTERNAL;
        }
        /* A trust-policy module (p11-kit-trust: the system's certificates) holds no keys; not
           starting it saves reading the certificate store at every unlock. */
        size_t used = 0;
        for (size_t i = 0; i < count; i++) {
            char *trust = P11(p11_kit_config_option)(m->loaded[i], "trust-policy");
            int skip = trust != NULL && strcmp(trust, "yes") == 0;
            free(trust);
            if (!skip) m->list[used++] = m->loaded[i];
        }
        m->from_p11kit = 1;
        /* A module that fails to start is dropped from the list (p11-kit says why on stderr). */
        (void)P11(p11_kit_modules_initialize)(m->list, NULL);
        return KEYBAY_OK;
    }
    snprintf(m->where, sizeof m->where, "the module %s", module_path);
    dlerror();
    /* The handle stays open: modules register exit handlers, and unloading them is not safe.
       Lazy binding, as pkcs11-tool loads modules: binding every function of a module and its
       libraries (libcrypto, libstdc++) up front is most of an unlock's start-up, for the few
       functions one unlock calls. */
    void *handle = dlopen(module_path, RTLD_LAZY | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        keybay_host_error(host, "pkcs11: cannot load the module %s (%s)", module_path, why != NULL ? why : "unknown error");
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    CK_C_GetFunctionList get_list = __extension__(CK_C_GetFunctionList)dlsym(handle, "C_GetFunctionList");
    CK_FUNCTION_LIST *f = NULL;
    if (get_list == NULL || get_list(&f) != CKR_OK || f == NULL) {
        keybay_host_error(host, "pkcs11: %s is not a PKCS#11 module (no C_GetFunctionList)", module_path);
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    CK_C_INITIALIZE_ARGS args;
    memset(&args, 0, sizeof args);
    args.flags = CKF_OS_LOCKING_OK;
    CK_RV rv = f->C_Initialize(&args);
    if (rv != CKR_OK && rv != CKR_CRYPTOKI_ALREADY_INITIALIZED) {
        keybay_host_error(host, "pkcs11: the module %s failed to initialise (CK_RV 0x%lx)", module_path, (unsigned long)rv);
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    m->finalize_single = rv == CKR_OK;
    m->single[0] = f;
    m->single[1] = NULL;
    m->list = m->single;
    return KEYBAY_OK;
}

void p11_modules_close(p11_modules *m) {
    if (m->list == NULL) return;
    if (m->from_p11kit) {
        P11(p11_kit_modules_finalize)(m->list);
        P11(p11_kit_modules_release)(m->loaded);
        free(m->list);
    } else if (m->finalize_single) {
        m->single[0]->C_Finalize(NULL);
    }
    m->list = NULL;
}

/* ---------------------------------------------------------------- tokens */

#define P11_MAX_SLOTS 64u

static void p11_token_name(p11_token *t) {
    p11_label_text(t->info.label, t->name);
}

/* Calls `visit` for every present token of every module until it returns non-zero. */
static int p11_each_token(p11_modules *m, int (*visit)(p11_token *, void *), void *context) {
    for (size_t i = 0; m->list[i] != NULL; i++) {
        CK_FUNCTION_LIST *f = m->list[i];
        CK_SLOT_ID slots[P11_MAX_SLOTS];
        CK_ULONG count = P11_MAX_SLOTS;
        if (f->C_GetSlotList(CK_TRUE, slots, &count) != CKR_OK) continue;
        for (CK_ULONG s = 0; s < count && s < P11_MAX_SLOTS; s++) {
            p11_token t;
            memset(&t, 0, sizeof t);
            t.f = f;
            t.slot = slots[s];
            if (f->C_GetTokenInfo(slots[s], &t.info) != CKR_OK) continue;
            p11_token_name(&t);
            int r = visit(&t, context);
            if (r != 0) return r;
        }
    }
    return 0;
}

typedef struct p11_uri_search {
    P11KitUri *uri;
    p11_token found;
    int matches;
} p11_uri_search;

static int p11_visit_uri(p11_token *t, void *context) {
    p11_uri_search *search = context;
    CK_INFO info;
    if (t->f->C_GetInfo(&info) != CKR_OK || !P11(p11_kit_uri_match_module_info)(search->uri, &info)) return 0;
    if (!P11(p11_kit_uri_match_token_info)(search->uri, &t->info)) return 0;
    if (search->matches++ == 0) search->found = *t;
    return 0;
}

keybay_status p11_token_by_uri(const keybay_host *host, p11_modules *m, P11KitUri *uri, p11_token *out) {
    p11_uri_search search = {.uri = uri};
    p11_each_token(m, p11_visit_uri, &search);
    if (search.matches == 0) {
        keybay_host_error_reason(host, "no-token");
        keybay_host_error(host, "pkcs11: no token present in %s matches option token (is the token inserted, and its module configured?)", m->where);
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (search.matches > 1) {
        keybay_host_error(host, "pkcs11: %d tokens in %s match option token; name one (token=, serial= in the URI)", search.matches, m->where);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    *out = search.found;
    return KEYBAY_OK;
}

typedef struct p11_identity_search {
    const uint8_t *label, *serial;
    p11_token found;
    int matched;
} p11_identity_search;

static int p11_visit_identity(p11_token *t, void *context) {
    p11_identity_search *search = context;
    if (memcmp(t->info.label, search->label, P11_LABEL_BYTES) != 0 || memcmp(t->info.serialNumber, search->serial, P11_SERIAL_BYTES) != 0)
        return 0;
    search->found = *t;
    search->matched = 1;
    return 1;
}

keybay_status p11_token_by_identity(const keybay_host *host, p11_modules *m, const uint8_t label[P11_LABEL_BYTES],
                                    const uint8_t serial[P11_SERIAL_BYTES], p11_token *out) {
    p11_identity_search search = {.label = label, .serial = serial};
    p11_each_token(m, p11_visit_identity, &search);
    if (!search.matched) {
        char name[P11_LABEL_BYTES + 1];
        p11_label_text(label, name);
        keybay_host_error(host, "pkcs11: the token '%s' this method was enrolled with is not present in %s (is it inserted, and its module configured?)",
                          name, m->where);
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    *out = search.found;
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- session and PIN */

/* A failure of the token, mapped to a status with one line naming what failed. */
keybay_status p11_failure(const keybay_host *host, p11_token *t, CK_RV rv, const char *what) {
    switch (rv) {
    case CKR_DEVICE_REMOVED:
    case CKR_TOKEN_NOT_PRESENT:
    case CKR_TOKEN_NOT_RECOGNIZED:
    case CKR_SLOT_ID_INVALID:
    case CKR_SESSION_HANDLE_INVALID:
    case CKR_SESSION_CLOSED:
    case CKR_DEVICE_ERROR:
        keybay_host_error_reason(host, "token-gone");
        keybay_host_error(host, "pkcs11: the token '%s' went away or failed while trying to %s (CK_RV 0x%lx)", t->name, what, (unsigned long)rv);
        return KEYBAY_ERR_NOT_AVAILABLE;
    case CKR_MECHANISM_INVALID:
    case CKR_MECHANISM_PARAM_INVALID:
    case CKR_KEY_TYPE_INCONSISTENT:
    case CKR_KEY_FUNCTION_NOT_PERMITTED:
    case CKR_FUNCTION_NOT_SUPPORTED:
    case CKR_TEMPLATE_INCONSISTENT:
    case CKR_TEMPLATE_INCOMPLETE:
    case CKR_ATTRIBUTE_VALUE_INVALID:
    case CKR_DOMAIN_PARAMS_INVALID:
        keybay_host_error(host, "pkcs11: the token '%s' cannot %s (CK_RV 0x%lx); docs/pkcs11.md lists what the method needs of a token",
                          t->name, what, (unsigned long)rv);
        return KEYBAY_ERR_UNSUPPORTED;
    default:
        keybay_host_error(host, "pkcs11: the token '%s' failed to %s (CK_RV 0x%lx)", t->name, what, (unsigned long)rv);
        return KEYBAY_ERR_INTERNAL;
    }
}

/* After a refused PIN: the flags as the token now reports them. */
static keybay_status p11_wrong_pin(const keybay_host *host, p11_token *t) {
    CK_TOKEN_INFO now;
    CK_FLAGS flags = t->f->C_GetTokenInfo(t->slot, &now) == CKR_OK ? now.flags : 0;
    if (flags & CKF_USER_PIN_LOCKED) {
        keybay_host_error_detail(host, "pin-locked", 0, NULL);
        keybay_host_error(host, "pkcs11: wrong PIN for the token '%s', which has now locked its PIN; unlock it with the SO PIN", t->name);
        return KEYBAY_ERR_LOCKED;
    }
    /* PKCS#11 tells only of the final try; a lower count is not known. */
    keybay_host_error_detail(host, "wrong-pin", flags & CKF_USER_PIN_FINAL_TRY ? 1 : -1, NULL);
    if (flags & CKF_USER_PIN_FINAL_TRY)
        keybay_host_error(host, "pkcs11: wrong PIN for the token '%s'; 1 try left before the token locks its PIN", t->name);
    else if (flags & CKF_USER_PIN_COUNT_LOW)
        keybay_host_error(host, "pkcs11: wrong PIN for the token '%s'; few tries left before the token locks its PIN", t->name);
    else
        keybay_host_error(host, "pkcs11: wrong PIN for the token '%s'", t->name);
    return KEYBAY_ERR_WRONG_SECRET;
}

keybay_status p11_session_login(const keybay_host *host, p11_token *t, uint8_t pin[P11_MAX_PIN + 1]) {
    CK_RV rv = t->f->C_OpenSession(t->slot, CKF_SERIAL_SESSION, NULL, NULL, &t->session);
    if (rv != CKR_OK) return p11_failure(host, t, rv, "open a session");
    t->has_session = 1;
    if (t->f->C_GetTokenInfo(t->slot, &t->info) != CKR_OK) return p11_failure(host, t, CKR_DEVICE_ERROR, "report its state");
    if (t->info.flags & CKF_USER_PIN_LOCKED) {
        keybay_host_error_detail(host, "pin-locked", 0, NULL);
        keybay_host_error(host, "pkcs11: the PIN of the token '%s' is locked; unlock it with the SO PIN", t->name);
        return KEYBAY_ERR_LOCKED;
    }
    if (t->info.flags & CKF_PROTECTED_AUTHENTICATION_PATH) {
        /* A PIN pad: the token asks, not us. */
        keybay_status said = keybay_host_message(host, KEYBAY_MESSAGE_INFO, "Enter the PIN of the token '%s' on its reader", t->name);
        if (said != KEYBAY_OK) return said;
        rv = t->f->C_Login(t->session, CKU_USER, NULL, 0);
    } else {
        if (!KEYBAY_HOST_HAS(host, ask_secret)) {
            keybay_host_error(host, "pkcs11: the PIN of the token '%s' is needed but the host cannot ask for one", t->name);
            return KEYBAY_ERR_INTERACTION_UNAVAILABLE;
        }
        char prompt[P11_LABEL_BYTES + 40];
        snprintf(prompt, sizeof prompt, "PIN of the token '%s'", t->name);
        int32_t retries = (t->info.flags & CKF_USER_PIN_FINAL_TRY) ? 1 : -1;
        size_t length = 0;
        keybay_status status = host->ask_secret(host->context, KEYBAY_SECRET_PIN, 0, prompt, retries, pin, P11_MAX_PIN + 1, &length);
        if (status == KEYBAY_OK && length > P11_MAX_PIN) {
            keybay_host_error(host, "pkcs11: a PIN longer than %u bytes cannot be the token's", P11_MAX_PIN);
            status = KEYBAY_ERR_WRONG_SECRET;
        }
        if (status == KEYBAY_OK) rv = t->f->C_Login(t->session, CKU_USER, pin, (CK_ULONG)length);
        sodium_memzero(pin, P11_MAX_PIN + 1);
        if (status != KEYBAY_OK) return status; /* CANCELLED, INTERACTION_UNAVAILABLE: as is */
    }
    switch (rv) {
    case CKR_OK:
    case CKR_USER_ALREADY_LOGGED_IN:
        return KEYBAY_OK;
    case CKR_PIN_INCORRECT:
    case CKR_PIN_INVALID:
    case CKR_PIN_LEN_RANGE:
        return p11_wrong_pin(host, t);
    case CKR_PIN_LOCKED:
        keybay_host_error_detail(host, "pin-locked", 0, NULL);
        keybay_host_error(host, "pkcs11: the PIN of the token '%s' is locked; unlock it with the SO PIN", t->name);
        return KEYBAY_ERR_LOCKED;
    case CKR_PIN_EXPIRED:
        keybay_host_error_reason(host, "pin-expired");
        keybay_host_error(host, "pkcs11: the PIN of the token '%s' has expired; set a new one with the token's tools", t->name);
        return KEYBAY_ERR_LOCKED;
    case CKR_USER_PIN_NOT_INITIALIZED:
        keybay_host_error_reason(host, "no-pin-set");
        keybay_host_error(host, "pkcs11: the token '%s' has no user PIN set; set one with the token's tools", t->name);
        return KEYBAY_ERR_UNSUPPORTED;
    case CKR_FUNCTION_CANCELED:
        keybay_host_error(host, "pkcs11: PIN entry on the token '%s' was cancelled", t->name);
        return KEYBAY_ERR_CANCELLED;
    default:
        return p11_failure(host, t, rv, "log in");
    }
}

void p11_session_close(p11_token *t) {
    if (!t->has_session) return;
    t->f->C_Logout(t->session);
    t->f->C_CloseSession(t->session);
    t->has_session = 0;
}
