// SPDX-License-Identifier: Apache-2.0
// root_reseal: keybay_root_reseal from C, for CAPITests: `root_reseal KEY` re-seals the tpm2 root
// of KEYBAY_APP_ID's store with the recovery key KEY and prints "ok", or the error's code name
// and reason ("wrong-secret wrong-recovery-key"), exiting 0 either way; 1 for a bad call.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <keybay/keybay.h>

int main(int argc, char **argv) {
    if (argc != 2) return 1;
    keybay_open_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.app_id = getenv("KEYBAY_APP_ID");
    keybay_error *err = NULL;
    keybay_code code = keybay_root_reseal(&o, (const uint8_t *)argv[1], strlen(argv[1]), &err);
    if (code == KEYBAY_OK) {
        printf("ok\n");
        return err == NULL ? 0 : 1;
    }
    if (err == NULL || keybay_error_code(err) != code) return 1;
    const char *reason = keybay_error_reason(err);
    printf("%s %s\n", keybay_error_name(err), reason ? reason : "-");
    keybay_error_free(err);
    return 0;
}
