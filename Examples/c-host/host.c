// SPDX-License-Identifier: Apache-2.0
// host: a small C host of libkeybay, written from <keybay/keybay.h> and docs/c-api.md.
//
//   host enroll APP            creates APP's store, sets the record `greeting`, enrolls a
//                              passphrase and a recovery key ("Paper key"; printed on stdout)
//   host open APP              opens the store, asking which method (choose_method) and its
//                              secret (ask), and prints `greeting: <value>`
//   host open APP --no-choice  opens without choose_method: with several methods that fails
//                              with authentication-required, and the methods are listed
//
// Questions go to standard error and answers are read from standard input, one line each.
// Exit status: 0 done; 1 a Keybay call failed (its message and [name] on stderr); 2 a method
// must be named (authentication-required; the store's methods listed on stderr); 64 usage.
#define _DEFAULT_SOURCE /* explicit_bzero */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <keybay/keybay.h>

enum { EXIT_KEYBAY = 1, EXIT_CHOOSE = 2, EXIT_USAGE = 64 };

/* A struct handed out by the library may be older (smaller) than this header's: read a field
 * only when the struct's own struct_size covers it. */
#define COVERS(s, type, field) ((s)->struct_size >= offsetof(type, field) + sizeof((s)->field))

/* Writes all of text[0..length) to a descriptor. write(2), not stdio: a secret printed through
 * stdio would stay behind in stdout's buffer, which nothing wipes. */
static void write_all(int fd, const char *text, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, text, length);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        text += n;
        length -= (size_t)n;
    }
}

/* Reads one line of standard input into buf[0..*length), without its newline, one byte at a
 * time with read(2): stdio would read ahead into a buffer of its own (a copy of the secret
 * nobody wipes, and the next answer swallowed). 0 on success; -1 on end of input before any
 * byte, or a line longer than `capacity` (then what was read is wiped). */
static int read_line(char *buf, size_t capacity, size_t *length) {
    size_t n = 0;
    for (;;) {
        char c;
        ssize_t got = read(STDIN_FILENO, &c, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {                             /* end of input: the last line may lack '\n' */
            if (n == 0) return -1;
            break;
        }
        if (c == '\n') break;
        if (n == capacity) { explicit_bzero(&c, sizeof c); explicit_bzero(buf, capacity); return -1; }
        buf[n++] = c;
        explicit_bzero(&c, sizeof c);
    }
    *length = n;
    return 0;
}

static const char *ask_kind_name(keybay_ask_kind kind) {
    switch (kind) {
    case KEYBAY_ASK_SECRET: return "secret";
    case KEYBAY_ASK_NEW_SECRET: return "new-secret";
    case KEYBAY_ASK_CONFIRM_NEW_SECRET: return "confirm-new-secret";
    }
    return "unknown";
}

static const char *or_none(const char *text) { return text ? text : "(none)"; }

/* keybay_interaction.ask: shows the whole request on stderr, reads the answer straight into the
 * library's buffer (guarded memory the library wipes after use, so the host keeps no copy). */
static int ask(void *context, const keybay_ask_request *request, char *buf, size_t capacity, size_t *len) {
    (void)context;
    fprintf(stderr, "ask: kind=%s secret_kind=%s label=\"%s\" method_id=%s plugin=%s app=%s",
            ask_kind_name(request->kind), or_none(request->secret_kind), or_none(request->label),
            or_none(request->method_id), or_none(request->plugin_id), or_none(request->app_id));
    if (COVERS(request, keybay_ask_request, is_retry)) fprintf(stderr, " tries_left=%d is_retry=%d", request->tries_left, request->is_retry);
    fprintf(stderr, "\n");
    if (COVERS(request, keybay_ask_request, is_retry) && request->is_retry) fprintf(stderr, "that was wrong; try again\n");
    /* The plugin's own line when it has one, else the kind of secret. */
    fprintf(stderr, "%s: ", request->prompt && request->prompt[0] ? request->prompt : or_none(request->secret_kind));
    return read_line(buf, capacity, len) == 0 ? 0 : KEYBAY_ERR_CANCELLED;
}

static void list_methods(const keybay_method_info *methods, size_t count) {
    for (size_t i = 0; i < count; i++) {
        fprintf(stderr, "  %zu) \"%s\" plugin=%s id=%s needs_device=%d\n", i + 1, methods[i].label, methods[i].plugin,
                methods[i].id, COVERS(&methods[i], keybay_method_info, needs_device) ? methods[i].needs_device : -1);
    }
}

/* keybay_interaction.choose_method: lists the methods, numbered from 1, and reads a number. */
static int choose_method(void *context, const keybay_method_info *methods, size_t count, size_t *chosen) {
    (void)context;
    fprintf(stderr, "choose a method:\n");
    list_methods(methods, count);
    fprintf(stderr, "number: ");
    char line[32];
    size_t length;
    if (read_line(line, sizeof line - 1, &length) != 0) return KEYBAY_ERR_CANCELLED;
    line[length] = '\0';
    char *end;
    unsigned long number = strtoul(line, &end, 10);
    if (end == line || *end != '\0' || number < 1 || number > count) {
        fprintf(stderr, "no method numbered \"%s\"\n", line);
        return KEYBAY_ERR_CANCELLED;
    }
    *chosen = (size_t)(number - 1);
    return 0;
}

/* keybay_interaction.show_secret: the recovery key, once it is stored. It is written to stdout
 * with write(2) and never copied; the library wipes its buffer when this returns. */
static void show_secret(void *context, const char *label, const char *secret) {
    (void)context;
    fprintf(stderr, "your %s, shown only now: keep it somewhere safe\n", label); /* label: the kind of secret */
    write_all(STDOUT_FILENO, "recovery key: ", strlen("recovery key: "));
    write_all(STDOUT_FILENO, secret, strlen(secret));
    write_all(STDOUT_FILENO, "\n", 1);
}

/* Prints a failure as "<what>: <message> [<name>]", frees the error, and gives the exit status. */
static int fail(const char *what, keybay_error *err) {
    fprintf(stderr, "%s: %s [%s]\n", what, keybay_error_message(err), keybay_error_name(err));
    keybay_error_free(err);
    return EXIT_KEYBAY;
}

static int enroll(const char *app, const keybay_interaction *interaction) {
    keybay_open_options options = {.struct_size = sizeof options, .app_id = app};
    keybay_error *err = NULL;
    keybay_store *store = keybay_open(&options, interaction, &err); /* created, platform-only */
    if (!store) return fail("open", err);
    const char *greeting = "hello from keybay";
    if (keybay_set(store, "greeting", (const uint8_t *)greeting, strlen(greeting), &err) != KEYBAY_OK) {
        keybay_close(store);
        return fail("set greeting", err);
    }
    const char *fast[] = {"memory-kib=8192", "iterations=1", "lanes=1", NULL}; /* an example's cost, not a real one */
    char *passphrase_id = NULL, *recovery_id = NULL;
    if (keybay_enroll(store, "passphrase", "Passphrase", fast, interaction, &passphrase_id, &err) != KEYBAY_OK) {
        keybay_free_string(passphrase_id); /* set when the method was stored all the same */
        keybay_close(store);
        return fail("enroll passphrase", err);
    }
    fprintf(stderr, "enrolled passphrase %s\n", passphrase_id);
    keybay_free_string(passphrase_id);
    if (keybay_enroll(store, "recovery", "Paper key", NULL, interaction, &recovery_id, &err) != KEYBAY_OK) {
        keybay_free_string(recovery_id);
        keybay_close(store);
        return fail("enroll recovery key", err);
    }
    fprintf(stderr, "enrolled recovery %s\n", recovery_id);
    keybay_free_string(recovery_id);
    keybay_close(store);
    return 0;
}

static int open_and_read(const char *app, const keybay_interaction *interaction) {
    keybay_open_options options = {.struct_size = sizeof options, .app_id = app, .method_id = NULL, .tries = 3};
    keybay_error *err = NULL;
    keybay_store *store = keybay_open(&options, interaction, &err);
    if (!store) {
        size_t count = 0;
        const keybay_method_info *methods = keybay_error_methods(err, &count);
        if (keybay_error_code(err) != KEYBAY_ERR_AUTHENTICATION_REQUIRED || !methods) return fail("open", err);
        fprintf(stderr, "open: %s [%s]; name one of:\n", keybay_error_message(err), keybay_error_name(err));
        list_methods(methods, count);
        keybay_error_free(err);
        return EXIT_CHOOSE;
    }
    uint8_t *value = NULL;
    size_t length = 0;
    if (keybay_get(store, "greeting", &value, &length, &err) != KEYBAY_OK) {
        keybay_close(store);
        return fail("get greeting", err);
    }
    write_all(STDOUT_FILENO, "greeting: ", strlen("greeting: "));
    write_all(STDOUT_FILENO, (const char *)value, length);
    write_all(STDOUT_FILENO, "\n", 1);
    keybay_free_value(value, length); /* wipes, then frees */
    keybay_close(store);
    return 0;
}

int main(int argc, char **argv) {
    int no_choice = argc == 4 && strcmp(argv[3], "--no-choice") == 0;
    if (!(argc == 3 || no_choice) || (strcmp(argv[1], "enroll") != 0 && strcmp(argv[1], "open") != 0)
        || (no_choice && strcmp(argv[1], "open") != 0)) {
        fprintf(stderr, "usage: host enroll APP | host open APP [--no-choice]\n");
        return EXIT_USAGE;
    }
    /* Designated initialisers: every field not named is NULL, and a later release's new fields
     * stay NULL too. The interaction must outlive the store it is given to. */
    keybay_interaction interaction = {
        .abi_version = KEYBAY_INTERACTION_ABI_VERSION,
        .struct_size = sizeof interaction,
        .ask = ask,                   /* preferred over ask_secret, which may then be NULL */
        .show_secret = show_secret,
        .choose_method = no_choice ? NULL : choose_method,
    };
    return strcmp(argv[1], "enroll") == 0 ? enroll(argv[2], &interaction) : open_and_read(argv[2], &interaction);
}
