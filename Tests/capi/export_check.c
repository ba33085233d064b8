/*
 * SPDX-License-Identifier: Apache-2.0
 * keybay_export and keybay_import_age from C: export_check RECIPIENT IDENTITY-FILE OUT.age
 * exports the records "alice" and "bob" of the app com.example.c-export to RECIPIENT (writing
 * OUT.age, which the test decrypts with age), imports that file into com.example.c-import with
 * IDENTITY-FILE, and checks the refusals. Prints "export_check: N checks, F failures".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <keybay/keybay.h>

static int checks, failures;
#define CHECK(condition, what) do { checks++; if (!(condition)) { failures++; printf("FAIL %s:%d %s\n", __FILE__, __LINE__, what); } } while (0)

static keybay_store *open_app(const char *app) {
    keybay_open_options o = {.struct_size = sizeof o, .app_id = app, .no_input = 1};
    keybay_error *err = NULL;
    keybay_store *store = keybay_open(&o, NULL, &err);
    if (!store) { printf("open %s: %s\n", app, keybay_error_message(err)); keybay_error_free(err); exit(1); }
    return store;
}

static int code_of(int rc, keybay_error *err) {
    keybay_error_free(err);
    return rc;
}

static size_t read_file(const char *path, uint8_t *buffer, size_t capacity) {
    FILE *f = fopen(path, "rb");
    if (!f) { printf("cannot read %s\n", path); exit(1); }
    size_t n = fread(buffer, 1, capacity, f);
    fclose(f);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 4) { printf("usage: export_check RECIPIENT IDENTITY-FILE OUT.age\n"); return 2; }
    keybay_error *err = NULL;
    keybay_store *source = open_app("com.example.c-export");
    CHECK(keybay_set(source, "alice", (const uint8_t *)"s3cret", 6, &err) == 0, "set alice");
    CHECK(keybay_set(source, "bob", NULL, 0, &err) == 0, "set bob");

    const char *recipients[] = {argv[1]};
    uint8_t *file = NULL;
    size_t length = 0;
    CHECK(keybay_export(source, recipients, 1, NULL, 0, 0, &file, &length, &err) == 0, "export");
    CHECK(file != NULL && length > 22 && memcmp(file, "age-encryption.org/v1\n", 22) == 0, "an age v1 file");
    FILE *out = fopen(argv[3], "wb");
    CHECK(out && fwrite(file, 1, length, out) == length, "written");
    if (out) fclose(out);

    const char *bad[] = {"age1notarecipient"};
    uint8_t *none = NULL;
    size_t none_length = 0;
    int rc = keybay_export(source, bad, 1, NULL, 0, 0, &none, &none_length, &err);
    CHECK(code_of(rc, err) == KEYBAY_ERR_INVALID_ARGUMENT && none == NULL, "a bad recipient");
    err = NULL;
    rc = keybay_export(source, recipients, 0, NULL, 0, 0, &none, &none_length, &err);
    CHECK(code_of(rc, err) == KEYBAY_ERR_INVALID_ARGUMENT, "no recipient");
    err = NULL;
    rc = keybay_export(source, recipients, 1, NULL, 0, 8, &none, &none_length, &err);
    CHECK(code_of(rc, err) == KEYBAY_ERR_INVALID_ARGUMENT, "unknown flags");
    err = NULL;

    static uint8_t identity[4096];
    size_t identity_length = read_file(argv[2], identity, sizeof identity);
    keybay_store *target = open_app("com.example.c-import");
    keybay_import_report report = {.struct_size = sizeof report};
    CHECK(keybay_import_age(target, file, length, identity, identity_length, KEYBAY_IMPORT_DRY_RUN, &report, &err) == 0, "dry run");
    CHECK(report.imported == 2 && report.unchanged == 0, "dry run counts");
    char **keys = NULL;
    size_t count = 0;
    CHECK(keybay_keys(target, &keys, &count, &err) == 0 && count == 0, "a dry run writes nothing");
    keybay_free_strings(keys, count);
    CHECK(keybay_import_age(target, file, length, identity, identity_length, 0, &report, &err) == 0, "import");
    CHECK(report.imported == 2 && report.conflicts == 0, "imported 2");
    uint8_t *value = NULL;
    size_t value_length = 0;
    CHECK(keybay_get(target, "alice", &value, &value_length, &err) == 0 && value_length == 6 && memcmp(value, "s3cret", 6) == 0, "alice read back");
    keybay_free_value(value, value_length);
    CHECK(keybay_set(target, "alice", (const uint8_t *)"other", 5, &err) == 0, "alice changed");
    CHECK(keybay_import_age(target, file, length, identity, identity_length, 0, &report, &err) == 0, "import again");
    CHECK(report.imported == 0 && report.unchanged == 1 && report.conflicts == 1, "one unchanged, one conflict");
    CHECK(keybay_import_age(target, file, length, identity, identity_length, KEYBAY_IMPORT_REPLACE, &report, &err) == 0, "replace");
    CHECK(report.replaced == 1 && report.unchanged == 1, "replaced");

    file[length - 1] ^= 1;
    rc = keybay_import_age(target, file, length, identity, identity_length, 0, &report, &err);
    CHECK(code_of(rc, err) == KEYBAY_ERR_INTEGRITY, "a damaged file");
    err = NULL;
    file[length - 1] ^= 1;
    keybay_import_report small = {0, 0, 0, 0, 0};
    rc = keybay_import_age(target, file, length, identity, identity_length, 0, &small, &err);
    CHECK(code_of(rc, err) == KEYBAY_ERR_INVALID_ARGUMENT, "a report without its size");
    err = NULL;
    rc = keybay_import_age(target, file, length, (const uint8_t *)"# nothing\n", 10, 0, &report, &err);
    CHECK(code_of(rc, err) == KEYBAY_ERR_INVALID_ARGUMENT, "an identity file without identities");
    err = NULL;

    keybay_free_value(file, length);
    keybay_close(target);
    keybay_close(source);
    printf("export_check: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
