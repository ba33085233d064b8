// SPDX-License-Identifier: Apache-2.0
/* The TPM plugins' shared connection to tpm2-tss: which TPM, for how long, reaching it and
   explaining why not (see include/keybay_tpm2.h). tss2's loading is tpm2_library.c, the lock
   tpm2_lock.c, the TCTI that gives up tpm2_bounded_tcti.c, the primary tpm2_primary.c. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "keybay_tpm2.h"
#include "tpm2_bounded_tcti.h"

#define fail keybay_rf_fail
#define DEFAULT_DEVICE KEYBAY_TPM2_DEFAULT_DEVICE
#define FALLBACK_DEVICE KEYBAY_TPM2_FALLBACK_DEVICE
#define TIMEOUT_MAX_MS KEYBAY_TPM2_TIMEOUT_MAX_MS
#define TCTI_MAX_BYTES KEYBAY_TPM2_TCTI_MAX_BYTES

/* ---------------------------------------------------------------- errors */

int keybay_tpm2_rc_is_tpm(TSS2_RC rc) { return (rc & TSS2_RC_LAYER_MASK) == TSS2_TPM_RC_LAYER; }

/* A TPM response code without the handle, session or parameter number. */
TSS2_RC keybay_tpm2_rc_base(TSS2_RC rc) {
    if (!keybay_tpm2_rc_is_tpm(rc)) return rc;
    return (rc & TPM2_RC_FMT1) ? (rc & (TPM2_RC_FMT1 | 0x3Fu)) : (rc & 0xFFFu);
}

/* The TCTI, or the TPM behind it, cannot be reached (as opposed to the TPM refusing a command). */
static int rc_unreachable(TSS2_RC rc) {
    TSS2_RC layer = rc & TSS2_RC_LAYER_MASK;
    return layer == TSS2_TCTI_RC_LAYER || rc == TSS2_ESYS_RC_IO_ERROR ||
           rc == TSS2_ESYS_RC_TRY_AGAIN || rc == TSS2_ESYS_RC_MALFORMED_RESPONSE;
}

/* ---------------------------------------------------------------- which TPM, and for how long */

/* The TCTIs KEYBAY_TPM2_TCTI may name: tpm2-tss's own, each loaded as libtss2-tcti-<name>.so.0
   from the system's library path. Never a library path, and none that records the traffic
   (pcap) or runs a command (cmd). */
static const char *const tcti_names[] = { "device", "swtpm", "mssim", "tabrmd" };

/* `value` with anything but printable ASCII shown as '?', cut at TCTI_MAX_BYTES. */
static void printable(char *out, size_t size, const char *value) {
    size_t i = 0;
    for (; value[i] && i + 1 < size && i < TCTI_MAX_BYTES; i++) out[i] = value[i] >= 0x20 && value[i] < 0x7f ? value[i] : '?';
    out[i] = 0;
}

/* Without KEYBAY_TPM2_TCTI, the device alone: /dev/tpmrm0, or /dev/tpm0 where there is no
   /dev/tpmrm0. Never a simulator or the network, which only the variable can name. */
static const char *default_device(void) {
    struct stat st;
    return stat(DEFAULT_DEVICE, &st) != 0 && errno == ENOENT && stat(FALLBACK_DEVICE, &st) == 0 ? FALLBACK_DEVICE : DEFAULT_DEVICE;
}

void keybay_tpm2_describe_tcti(char *out, size_t size) {
    const char *conf = getenv("KEYBAY_TPM2_TCTI");
    char shown[TCTI_MAX_BYTES + 1];
    if (conf && *conf) { printable(shown, sizeof shown, conf); snprintf(out, size, "the TPM at KEYBAY_TPM2_TCTI=%s", shown); }
    else snprintf(out, size, "the TPM at %s (the default: the device alone, KEYBAY_TPM2_TCTI unset)", default_device());
}

/* Which TCTI library, with which configuration; a value that is not a TCTI name and its
   configuration is refused (INVALID_OPTION: the CLI's exit 2) before anything is loaded. */
static keybay_status choose_tcti(const keybay_host *host, keybay_tpm2 *t) {
    const char *value = getenv("KEYBAY_TPM2_TCTI");
    keybay_tpm2_describe_tcti(t->where, sizeof t->where);
    if (!value || !*value) {
        t->device = default_device();
        snprintf(t->library, sizeof t->library, "libtss2-tcti-device.so.0");
        snprintf(t->conf, sizeof t->conf, "%s", t->device);
        return KEYBAY_OK;
    }
    const char *colon = strchr(value, ':');
    size_t name_length = colon ? (size_t)(colon - value) : strlen(value);
    const char *name = NULL;
    for (size_t i = 0; i < sizeof tcti_names / sizeof tcti_names[0]; i++)
        if (strlen(tcti_names[i]) == name_length && memcmp(tcti_names[i], value, name_length) == 0) name = tcti_names[i];
    if (!name || strlen(value) >= TCTI_MAX_BYTES) {
        char shown[TCTI_MAX_BYTES + 1];
        printable(shown, sizeof shown, value);
        keybay_host_error_reason(host, "tcti-refused");
        return fail(host, KEYBAY_ERR_INVALID_OPTION, "KEYBAY_TPM2_TCTI=%s is not a TCTI the %s uses: give device, swtpm, mssim or "
                    "tabrmd and its configuration (e.g. device:/dev/tpmrm0, swtpm:host=127.0.0.1,port=2321), never a library path%s",
                    shown, t->user, strlen(value) >= TCTI_MAX_BYTES ? " (and at most 255 bytes)" : "");
    }
    snprintf(t->library, sizeof t->library, "libtss2-tcti-%s.so.0", name);
    snprintf(t->conf, sizeof t->conf, "%s", colon ? colon + 1 : "");
    if (strcmp(name, "device") == 0) t->device = t->conf[0] ? t->conf : DEFAULT_DEVICE;
    return KEYBAY_OK;
}

/* KEYBAY_TPM2_TIMEOUT_MS: milliseconds, 1 to 30000 (a larger number is 30000); unset, 30000. */
static keybay_status choose_timeout(const keybay_host *host, keybay_tpm2 *t) {
    const char *value = getenv("KEYBAY_TPM2_TIMEOUT_MS");
    t->timeout_ms = TIMEOUT_MAX_MS;
    if (!value || !*value) return KEYBAY_OK;
    long ms = 0; /* all digits; saturates past the cap */
    for (const char *p = value; *p && ms >= 0; p++) ms = *p < '0' || *p > '9' ? -1 : ms > TIMEOUT_MAX_MS ? ms : ms * 10 + (*p - '0');
    if (ms < 1) {
        char shown[32];
        printable(shown, sizeof shown, value);
        keybay_host_error_reason(host, "timeout-refused");
        return fail(host, KEYBAY_ERR_INVALID_OPTION, "KEYBAY_TPM2_TIMEOUT_MS=%s: give the %s's bound in milliseconds, 1 to 30000", shown, t->user);
    }
    t->timeout_ms = ms < TIMEOUT_MAX_MS ? ms : TIMEOUT_MAX_MS;
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- the TPM connection */

/* Why the TPM cannot be used: it did not answer in time; its device is missing, or not this
   user's to use (/dev/tpmrm0 is usually root:tss 0660); or what tss2 said. Each with its reason
   (docs/tpm2-pin.md, "Errors"; the tpm2 root's are the same). */
keybay_status keybay_tpm2_unreachable(const keybay_host *host, const keybay_tpm2 *t, TSS2_RC rc) {
    if (t->tcti && keybay_tpm2_bounded_abandoned(t->tcti)) {
        keybay_host_error_reason(host, "tpm-timeout");
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "%s did not answer within %ld ms (a TPM or simulator that is stopped or hung; "
                    "KEYBAY_TPM2_TIMEOUT_MS sets this bound, at most 30000)", t->where, t->timeout_ms);
    }
    const char *reason = rc ? T(Tss2_RC_Decode)(rc) : "no TCTI";
    const char *device = t->device;
    const char *conf = getenv("KEYBAY_TPM2_TCTI");
    if (device) {
        struct stat st;
        if (stat(device, &st) != 0) {
            keybay_host_error_detail(host, "no-tpm", -1, device);
            if (!conf || !*conf)
                return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no TPM: neither " DEFAULT_DEVICE " nor " FALLBACK_DEVICE " exists (no TPM 2.0 "
                            "here, or its driver is not loaded); a simulator or another TPM is used only when KEYBAY_TPM2_TCTI names it (%s)", reason);
            return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no TPM: %s does not exist (no TPM 2.0 here, or its driver is not loaded; "
                        "set KEYBAY_TPM2_TCTI to reach another one) (%s)", device, reason);
        }
        if (access(device, R_OK | W_OK) != 0) {
            struct group *g = getgrgid(st.st_gid);
            const char *name = g ? g->gr_name : "?";
            keybay_host_error_detail(host, "device-permission", -1, device);
            /* Joining the device's group helps only where that group may read and write it, and
               never for root's group. */
            if (st.st_gid != 0 && (st.st_mode & 060) == 060)
                return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no permission to use the TPM: %s is mode %04o, group %s, and this user may "
                            "not read and write it; add the user to group %s and log in again",
                            device, (unsigned)(st.st_mode & 07777), name, name);
            return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no permission to use the TPM: %s is mode %04o, group %s, and this user may not "
                        "read and write it; the administrator can give it to a group such as tss with mode 0660 (a udev rule)",
                        device, (unsigned)(st.st_mode & 07777), name);
        }
    }
    if (rc == TSS2_TCTI_RC_NOT_SUPPORTED) {
        keybay_host_error_reason(host, "tcti-unsupported");
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot reach %s: tpm2-tss cannot load %s here (%s)", t->where, t->library, reason);
    }
    keybay_host_error_reason(host, "tpm-unreachable");
    return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot reach %s: %s", t->where, reason);
}

void keybay_tpm2_close(keybay_tpm2 *t) {
    if (t->esys) T(Esys_Finalize)(&t->esys);
    if (t->tcti) keybay_tpm2_bounded_close(t->tcti);
    t->tcti = NULL;
    if (t->lock >= 0) close(t->lock); /* releases the flock */
    t->lock = -1;
}

keybay_status keybay_tpm2_begin(const keybay_host *host, keybay_tpm2 *t, const char *plugin, const char *user) {
    memset(t, 0, sizeof *t);
    t->lock = -1;
    t->plugin = plugin;
    t->user = user;
    keybay_status s = choose_tcti(host, t);
    if (s == KEYBAY_OK) s = choose_timeout(host, t);
    if (s != KEYBAY_OK) return s;
    clock_gettime(CLOCK_MONOTONIC, &t->deadline);
    t->deadline.tv_sec += t->timeout_ms / 1000;
    t->deadline.tv_nsec += (t->timeout_ms % 1000) * 1000000;
    if (t->deadline.tv_nsec >= 1000000000) { t->deadline.tv_sec++; t->deadline.tv_nsec -= 1000000000; }
    const char *unloaded = keybay_tpm2_load_tss();
    if (unloaded)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "%s cannot load tpm2-tss (%s); the %s needs the packages libtss2-esys-3.0.2-0, "
                    "libtss2-sys1, libtss2-tctildr0, libtss2-mu0, libtss2-rc0 and libssl3 (libcrypto)", plugin, unloaded, user);
    return KEYBAY_OK;
}

keybay_status keybay_tpm2_probe(const keybay_host *host, const char *plugin, const char *user) {
    keybay_tpm2 t;
    keybay_status s = keybay_tpm2_begin(host, &t, plugin, user);
    if (s == KEYBAY_OK && t.device && access(t.device, R_OK | W_OK) != 0) s = keybay_tpm2_unreachable(host, &t, 0);
    keybay_tpm2_close(&t);
    return s == KEYBAY_ERR_INVALID_OPTION ? KEYBAY_ERR_NOT_AVAILABLE : s;
}

keybay_status keybay_tpm2_connect(const keybay_host *host, keybay_tpm2 *t) {
    keybay_status s = keybay_tpm2_bounded_start(host, t);
    TSS2_RC rc = TSS2_RC_SUCCESS;
    if (s == KEYBAY_OK && (!keybay_tpm2_bounded_initialize(t->tcti, &rc) || rc != TSS2_RC_SUCCESS)) s = keybay_tpm2_unreachable(host, t, rc);
    if (s == KEYBAY_OK && (rc = T(Esys_Initialize)(&t->esys, (TSS2_TCTI_CONTEXT *)t->tcti, NULL)) != TSS2_RC_SUCCESS) {
        t->esys = NULL;
        s = keybay_tpm2_unreachable(host, t, rc);
    }
    if (s != KEYBAY_OK) keybay_tpm2_close(t);
    return s;
}

/* A failed command: unreachable, or the TPM's own refusal with `status`. */
keybay_status keybay_tpm2_fail(const keybay_host *host, const keybay_tpm2 *t, TSS2_RC rc, keybay_status status, const char *what) {
    if (rc_unreachable(rc)) return keybay_tpm2_unreachable(host, t, rc);
    if (keybay_tpm2_rc_base(rc) == TPM2_RC_LOCKOUT)
        return fail(host, KEYBAY_ERR_LOCKED, "%s: %s is in dictionary-attack lockout (%s)", what, t->where, T(Tss2_RC_Decode)(rc));
    return fail(host, status, "%s on %s: %s", what, t->where, T(Tss2_RC_Decode)(rc));
}

/* Flushes transient objects left loaded by killed processes (only without a resource manager,
   which flushes them itself), so that the command can be tried once more. */
int keybay_tpm2_flush_leftovers(keybay_tpm2 *t, TSS2_RC rc) {
    TSS2_RC base = keybay_tpm2_rc_base(rc);
    if (base != TPM2_RC_OBJECT_MEMORY && base != TPM2_RC_SESSION_MEMORY) return 0;
    TPMS_CAPABILITY_DATA *data = NULL;
    TPMI_YES_NO more = 0;
    int flushed = 0;
    TPM2_HC first = base == TPM2_RC_OBJECT_MEMORY ? TPM2_TRANSIENT_FIRST : TPM2_LOADED_SESSION_FIRST;
    if (T(Esys_GetCapability)(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_HANDLES, first, 64, &more, &data) != TSS2_RC_SUCCESS)
        return 0;
    for (UINT32 i = 0; i < data->data.handles.count; i++) {
        ESYS_TR object;
        if (T(Esys_TR_FromTPMPublic)(t->esys, data->data.handles.handle[i], ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &object) == TSS2_RC_SUCCESS &&
            T(Esys_FlushContext)(t->esys, object) == TSS2_RC_SUCCESS)
            flushed++;
    }
    T(Esys_Free)(data);
    return flushed > 0;
}

void keybay_tpm2_flush(keybay_tpm2 *t, ESYS_TR *handle) {
    if (*handle != ESYS_TR_NONE) T(Esys_FlushContext)(t->esys, *handle);
    *handle = ESYS_TR_NONE;
}
