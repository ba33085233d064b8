// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include "keybay_image.h"

char *keybay_image_path(void) {
    Dl_info info;
    if (dladdr((void *)&keybay_image_path, &info) == 0 || info.dli_fname == NULL) return NULL;
    return realpath(info.dli_fname, NULL);
}
