// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include <link.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "keybay_image.h"

struct search { uintptr_t address; const char *name; int found; };

/* The loaded object whose segments hold the address. dl_iterate_phdr, not dladdr: dladdr also
   looks for the nearest symbol, a walk through every symbol of a large static executable that
   cost the CLI's start-up a measurable share. */
static int contains(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct search *s = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD) continue;
        uintptr_t start = info->dlpi_addr + p->p_vaddr;
        if (s->address >= start && s->address < start + p->p_memsz) {
            s->name = info->dlpi_name;
            s->found = 1;
            return 1;
        }
    }
    return 0;
}

char *keybay_image_path(void) {
    struct search s = { (uintptr_t)&keybay_image_path, NULL, 0 };
    dl_iterate_phdr(contains, &s);
    /* The executable itself has an empty name: then there is no library to look beside. */
    if (!s.found || s.name == NULL || s.name[0] == 0) return NULL;
    return realpath(s.name, NULL);
}
