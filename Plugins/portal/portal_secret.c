// SPDX-License-Identifier: Apache-2.0
/* The XDG Secret portal, asked through GIO opened on first use: see portal_secret.h. */
#define _GNU_SOURCE /* pipe2 */

#include "portal_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "keybay_lazy_library.h"
#include "keybay_plugin_host.h"
#include "keybay_root_files.h"

#define fail keybay_rf_fail

/* ---- the GLib and GIO types used (as their public headers declare them) ---- */

typedef struct pt_error { uint32_t domain; int code; char *message; } pt_error; /* GError */
typedef void pt_object; /* GDBusConnection, GUnixFDList, GVariant, GVariantBuilder, GMainContext */
typedef void (*pt_signal_callback)(pt_object *connection, const char *sender, const char *path, const char *interface,
                                   const char *signal, pt_object *parameters, void *user_data);

enum { BUS_TYPE_SESSION = 2 /* G_BUS_TYPE_SESSION */ };

#define PT_LIBRARY "libgio-2.0.so.0"
#define PT_FUNCTIONS(X)                                                                                            \
    X(g_bus_get_sync, pt_object *, (int type, void *cancellable, pt_error **error))                              \
    X(g_dbus_connection_get_unique_name, const char *, (pt_object *connection))                                  \
    X(g_dbus_connection_signal_subscribe, unsigned, (pt_object *connection, const char *sender,                   \
                                                     const char *interface, const char *member, const char *path, \
                                                     const char *arg0, int flags, pt_signal_callback callback,    \
                                                     void *user_data, void (*free_data)(void *)))                 \
    X(g_dbus_connection_signal_unsubscribe, void, (pt_object *connection, unsigned id))                          \
    X(g_dbus_connection_call_with_unix_fd_list_sync, pt_object *,                                                 \
      (pt_object *connection, const char *bus_name, const char *path, const char *interface, const char *method,  \
       pt_object *parameters, const void *reply_type, int flags, int timeout, pt_object *fd_list,                 \
       pt_object **out_fd_list, void *cancellable, pt_error **error))                                             \
    X(g_unix_fd_list_new, pt_object *, (void))                                                                    \
    X(g_unix_fd_list_append, int, (pt_object *list, int fd, pt_error **error))                                   \
    X(g_variant_builder_new, pt_object *, (const void *type))                                                     \
    X(g_variant_builder_add, void, (pt_object *builder, const char *format, ...))                                 \
    X(g_variant_builder_unref, void, (pt_object *builder))                                                        \
    X(g_variant_new, pt_object *, (const char *format, ...))                                                      \
    X(g_variant_new_string, pt_object *, (const char *text))                                                      \
    X(g_variant_get_child_value, pt_object *, (pt_object *value, size_t index))                                   \
    X(g_variant_get_uint32, uint32_t, (pt_object *value))                                                         \
    X(g_variant_is_of_type, int, (pt_object *value, const void *type))                                            \
    X(g_variant_unref, void, (pt_object *value))                                                                  \
    X(g_main_context_new, pt_object *, (void))                                                                    \
    X(g_main_context_push_thread_default, void, (pt_object *context))                                            \
    X(g_main_context_pop_thread_default, void, (pt_object *context))                                             \
    X(g_main_context_iteration, int, (pt_object *context, int may_block))                                        \
    X(g_main_context_unref, void, (pt_object *context))                                                           \
    X(g_object_unref, void, (pt_object *object))                                                                  \
    X(g_error_free, void, (pt_error *error))

static struct {
    PT_FUNCTIONS(KEYBAY_LAZY_TYPED_POINTER)
} pt_lib; /* filled only when every symbol resolved */
#define PT(name) (pt_lib.name)
KEYBAY_LAZY_LIBRARY(pt_library, PT_LIBRARY, RTLD_LAZY, pt_lib, PT_FUNCTIONS, KEYBAY_LAZY_TYPED_NAME);

static keybay_status fail_error(const keybay_host *host, keybay_status status, const char *what, pt_error *error) {
    keybay_status s = fail(host, status, "%s: %s", what, error && error->message ? error->message : "no reason given");
    if (error) PT(g_error_free)(error);
    return s;
}


int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- the portal ---- */

typedef struct response_wait {
    int answered;
    uint32_t code;
} response_wait;

static void on_response(pt_object *connection, const char *sender, const char *path, const char *interface,
                        const char *signal, pt_object *parameters, void *user_data) {
    (void)connection; (void)sender; (void)path; (void)interface; (void)signal;
    response_wait *wait = user_data;
    if (!PT(g_variant_is_of_type)(parameters, "(ua{sv})")) return;
    pt_object *code = PT(g_variant_get_child_value)(parameters, 0);
    wait->code = PT(g_variant_get_uint32)(code);
    PT(g_variant_unref)(code);
    wait->answered = 1;
}

/* The request object path for `token`: /org/freedesktop/portal/desktop/request/SENDER/TOKEN,
   SENDER being the unique name without its ':' and with '.' as '_'. */
static int request_path(const char *unique, const char *token, char *out, size_t size) {
    if (!unique || unique[0] != ':') return 0;
    int n = snprintf(out, size, "/org/freedesktop/portal/desktop/request/%s/%s", unique + 1, token);
    if (n < 0 || (size_t)n >= size) return 0;
    for (char *p = out + strlen("/org/freedesktop/portal/desktop/request/"); *p && *p != '/'; p++)
        if (*p == '.') *p = '_';
    return 1;
}

/* Asks the portal for this sandbox's secret, within PORTAL_TIMEOUT_MS: subscribes to the
   request's Response first (its path is known from the handle token), passes the write end of a
   pipe, then reads the pipe to its end and waits for Response 0. The secret, in guarded memory,
   is SECRET_MIN_BYTES..SECRET_MAX_BYTES long. */
keybay_status retrieve_secret(const keybay_host *host, uint8_t **secret_out, size_t *length_out) {
    const char *why = keybay_lazy_library_open(&pt_library);
    if (why != NULL)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot load " PT_LIBRARY " (%s); the portal root needs GIO (Debian: libglib2.0-0) and " PORTAL_NAME, why);
    keybay_status s = keybay_rf_check_session_bus(host, "portal", PORTAL_NAME);
    if (s != KEYBAY_OK) return s;
    int64_t deadline = now_ms() + PORTAL_TIMEOUT_MS;
    uint8_t *secret = sodium_malloc(SECRET_MAX_BYTES + 1);
    if (!secret) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    pt_object *context = PT(g_main_context_new)();
    PT(g_main_context_push_thread_default)(context); /* the Response is dispatched here, and only here */
    pt_error *error = NULL;
    pt_object *connection = PT(g_bus_get_sync)(BUS_TYPE_SESSION, NULL, &error);
    if (!connection) s = fail_error(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot reach the session bus for " PORTAL_NAME, error);
    char token[40], path[512];
    uint8_t random[12];
    randombytes_buf(random, sizeof random);
    snprintf(token, sizeof token, "keybay_");
    sodium_bin2hex(token + 7, sizeof token - 7, random, sizeof random);
    if (s == KEYBAY_OK && !request_path(PT(g_dbus_connection_get_unique_name)(connection), token, path, sizeof path))
        s = fail(host, KEYBAY_ERR_NOT_AVAILABLE, "the session bus gave this connection no usable unique name");
    response_wait wait = { 0, 0 };
    unsigned subscription = 0;
    if (s == KEYBAY_OK)
        subscription = PT(g_dbus_connection_signal_subscribe)(connection, "org.freedesktop.portal.Desktop", "org.freedesktop.portal.Request", "Response",
                                                              path, NULL, 0, on_response, &wait, NULL);
    int pipe_fds[2] = { -1, -1 };
    if (s == KEYBAY_OK && pipe2(pipe_fds, O_CLOEXEC) != 0) s = fail(host, KEYBAY_ERR_IO, "cannot make a pipe for the portal's secret: %s", strerror(errno));
    if (s == KEYBAY_OK) {
        pt_object *fds = PT(g_unix_fd_list_new)();
        int index = PT(g_unix_fd_list_append)(fds, pipe_fds[1], &error); /* the list holds a copy */
        close(pipe_fds[1]);
        pipe_fds[1] = -1;
        if (index < 0) {
            s = fail_error(host, KEYBAY_ERR_IO, "cannot pass the pipe to the portal", error);
        } else {
            pt_object *options = PT(g_variant_builder_new)("a{sv}");
            PT(g_variant_builder_add)(options, "{sv}", "handle_token", PT(g_variant_new_string)(token));
            pt_object *parameters = PT(g_variant_new)("(ha{sv})", index, options);
            PT(g_variant_builder_unref)(options);
            int remaining = (int)(deadline - now_ms());
            pt_object *reply = PT(g_dbus_connection_call_with_unix_fd_list_sync)(
                connection, "org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop", "org.freedesktop.portal.Secret",
                "RetrieveSecret", parameters, NULL, 0, remaining > 1 ? remaining : 1, fds, NULL, NULL, &error);
            if (reply) PT(g_variant_unref)(reply);
            else s = fail_error(host, KEYBAY_ERR_NOT_AVAILABLE, "no answer from " PORTAL_NAME, error);
        }
        PT(g_object_unref)(fds); /* closes the list's copy: the portal's side holds the only write end now */
    }
    size_t total = 0;
    int ended = 0;
    while (s == KEYBAY_OK && !(ended && wait.answered)) {
        while (PT(g_main_context_iteration)(context, 0)) {}
        if (wait.answered && wait.code != 0) {
            s = fail(host, KEYBAY_ERR_NOT_AVAILABLE, "%s refused to give this application's secret (response %u)", PORTAL_NAME, wait.code);
            break;
        }
        int64_t remaining = deadline - now_ms();
        if (remaining <= 0) {
            s = fail(host, KEYBAY_ERR_NOT_AVAILABLE, "%s gave no secret within %d ms", PORTAL_NAME, PORTAL_TIMEOUT_MS);
            break;
        }
        if (ended) { usleep(5000); continue; }
        struct pollfd p = { .fd = pipe_fds[0], .events = POLLIN };
        int ready = poll(&p, 1, remaining < 20 ? (int)remaining : 20);
        if (ready < 0 && errno != EINTR) { s = fail(host, KEYBAY_ERR_IO, "cannot wait for the portal's secret: %s", strerror(errno)); break; }
        if (ready <= 0) continue;
        ssize_t n = read(pipe_fds[0], secret + total, SECRET_MAX_BYTES + 1 - total);
        if (n < 0) { if (errno == EINTR || errno == EAGAIN) continue; s = fail(host, KEYBAY_ERR_IO, "cannot read the portal's secret: %s", strerror(errno)); break; }
        if (n == 0) ended = 1;
        total += (size_t)n;
        if (total > SECRET_MAX_BYTES) { s = fail(host, KEYBAY_ERR_NOT_AVAILABLE, "%s gave a secret longer than %d bytes", PORTAL_NAME, SECRET_MAX_BYTES); break; }
    }
    if (s == KEYBAY_OK && total < SECRET_MIN_BYTES)
        s = fail(host, KEYBAY_ERR_NOT_AVAILABLE, "%s gave a secret of %zu bytes, fewer than %d", PORTAL_NAME, total, SECRET_MIN_BYTES);
    if (pipe_fds[0] >= 0) close(pipe_fds[0]);
    if (subscription) PT(g_dbus_connection_signal_unsubscribe)(connection, subscription);
    while (PT(g_main_context_iteration)(context, 0)) {} /* lets the unsubscription's cleanup run */
    if (connection) PT(g_object_unref)(connection);
    PT(g_main_context_pop_thread_default)(context);
    PT(g_main_context_unref)(context);
    if (s != KEYBAY_OK) { sodium_free(secret); return s; }
    *secret_out = secret;
    *length_out = total;
    return KEYBAY_OK;
}

