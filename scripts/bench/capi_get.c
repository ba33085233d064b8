// SPDX-License-Identifier: Apache-2.0
// keybay-bench's C API rows (built by scripts/bench.sh against this build's libkeybay.so):
//   capi_get get APP COUNT OUT          COUNT keybay_get calls of 64-byte values in one open
//                                       store (keys k/0 .. k/1023, made by the bench); writes the
//                                       nanoseconds per call to OUT
//   capi_get open APP ROOT COUNT OUT    COUNT rounds, alternating, of keybay_open + keybay_get +
//                                       keybay_close (record k/0, root ROOT) and libsecret's
//                                       secret_password_lookup_sync of one item (attribute
//                                       bench=capi, stored by the bench); writes the median
//                                       nanoseconds of each to OUT
// Timing is in-process, so only what the call costs is measured, not the process's start.
#include <keybay/keybay.h>
#include <libsecret/secret.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *xs, int n) { qsort(xs, (size_t)n, sizeof *xs, compare); return xs[n / 2]; }

static void fail(const char *what, keybay_error *err) {
    fprintf(stderr, "capi_get: %s: %s\n", what, err ? keybay_error_message(err) : "failed");
    exit(1);
}

static keybay_store *open_store(const char *app, const char *root) {
    keybay_open_options options = {.struct_size = sizeof options, .app_id = app, .root = root, .no_input = 1};
    keybay_error *err = NULL;
    keybay_store *store = keybay_open(&options, NULL, &err);
    if (!store) fail("keybay_open", err);
    return store;
}

static void get_one(keybay_store *store, const char *key) {
    uint8_t *value = NULL;
    size_t length = 0;
    keybay_error *err = NULL;
    if (keybay_get(store, key, &value, &length, &err) != 0) fail("keybay_get", err);
    keybay_free_value(value, length);
}

static const SecretSchema bench_schema = {
    .name = "org.keybay.Bench", .flags = SECRET_SCHEMA_DONT_MATCH_NAME,
    .attributes = {{"bench", SECRET_SCHEMA_ATTRIBUTE_STRING}, {NULL, 0}}};

int main(int argc, char **argv) {
    FILE *out;
    if (argc == 5 && strcmp(argv[1], "get") == 0) {
        int count = atoi(argv[3]);
        keybay_store *store = open_store(argv[2], NULL);
        char key[32];
        get_one(store, "k/0"); // the first call warms what a long-running host has warm
        double t0 = now_ns();
        for (int i = 0; i < count; i++) {
            snprintf(key, sizeof key, "k/%d", i % 1024);
            get_one(store, key);
        }
        double per = (now_ns() - t0) / count;
        keybay_close(store);
        if (!(out = fopen(argv[4], "w"))) return 1;
        fprintf(out, "%.1f\n", per);
        return fclose(out) != 0;
    }
    if (argc == 6 && strcmp(argv[1], "open") == 0) {
        int count = atoi(argv[4]);
        double *ours = calloc((size_t)count, sizeof *ours), *theirs = calloc((size_t)count, sizeof *theirs);
        if (!ours || !theirs) return 1;
        for (int i = 0; i < count; i++) {
            double t0 = now_ns();
            keybay_store *store = open_store(argv[2], argv[3]);
            get_one(store, "k/0");
            keybay_close(store);
            double t1 = now_ns();
            GError *error = NULL;
            gchar *secret = secret_password_lookup_sync(&bench_schema, NULL, &error, "bench", "capi", NULL);
            double t2 = now_ns();
            if (!secret) { fprintf(stderr, "capi_get: libsecret found no item%s%s\n", error ? ": " : "", error ? error->message : ""); return 1; }
            secret_password_free(secret);
            ours[i] = t1 - t0;
            theirs[i] = t2 - t1;
        }
        if (!(out = fopen(argv[5], "w"))) return 1;
        fprintf(out, "%.1f %.1f\n", median(ours, count), median(theirs, count));
        return fclose(out) != 0;
    }
    fprintf(stderr, "usage: capi_get get APP COUNT OUT | open APP ROOT COUNT OUT\n");
    return 2;
}
