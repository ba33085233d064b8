// SPDX-License-Identifier: Apache-2.0
/*
 * fork_host — a C host that forks after an isolated method ran (docs/c-api.md, "fork"):
 *   fork_host APP daemon FILE   the parent opens the protected store, forks and exits at once
 *                          (the usual daemon pattern); the child writes its pid, then opens the
 *                          store twice and writes each value, to FILE (the test's bound ends with
 *                          the parent: it reads FILE and kills the child itself).
 *   fork_host APP both     the parent opens it, forks, and parent and child each open it twice at
 *                          the same time; the parent waits for the child.
 * The passphrase is "fork passphrase"; the record "k" is expected to hold "v". Exit 0 when every
 * read gave "v".
 */
#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC under -std=c11 */
#include <keybay/keybay.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *app;

static int answer(void *context, const char *prompt, int is_confirmation, char *buf, size_t capacity, size_t *len) {
    (void)context; (void)prompt; (void)is_confirmation;
    static const char passphrase[] = "fork passphrase";
    if (capacity < sizeof passphrase - 1) return KEYBAY_ERR_CANCELLED;
    memcpy(buf, passphrase, sizeof passphrase - 1);
    *len = sizeof passphrase - 1;
    return 0;
}

/* Opens the store, reads "k", closes it: 0 when it held "v". */
static int read_once(const char *who) {
    keybay_interaction interaction = { .abi_version = KEYBAY_INTERACTION_ABI_VERSION, .struct_size = sizeof interaction, .ask_secret = answer };
    keybay_open_options options = { .struct_size = sizeof options, .app_id = app };
    keybay_error *err = NULL;
    keybay_store *store = keybay_open(&options, &interaction, &err);
    if (store == NULL) {
        printf("%s: open failed: %s\n", who, keybay_error_message(err));
        keybay_error_free(err);
        return 1;
    }
    uint8_t *value = NULL;
    size_t length = 0;
    int r = keybay_get(store, "k", &value, &length, &err);
    int ok = r == 0 && length == 1 && value[0] == 'v';
    printf("%s: %s\n", who, ok ? "v" : "wrong");
    if (r != 0) keybay_error_free(err);
    keybay_free_value(value, length);
    keybay_close(store);
    fflush(stdout);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    int daemon = argc == 4 && strcmp(argv[2], "daemon") == 0;
    if (argc != 3 && !daemon) return 2;
    app = argv[1];
    if (read_once("parent") != 0) return 1;
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        if (daemon) {
            int out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (out < 0 || null < 0 || dup2(out, 1) < 0 || dup2(null, 2) < 0) _exit(1);
            printf("pid %d\n", (int)getpid());
            fflush(stdout);
        }
        _exit(read_once("child") | read_once("child"));
    }
    if (daemon) return 0;
    int failed = read_once("parent") | read_once("parent");
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    return failed;
}
