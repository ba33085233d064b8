// SPDX-License-Identifier: Apache-2.0
/*
 * The libraries a plugin needs, read from its ELF file as data (docs/plugins.md, "Isolation").
 * Nothing here maps or runs any of the plugin's code: `ld.so --list` would load the plugin as
 * the dynamic loader does, and a DT_AUDIT tag would then run the plugin's la_* hooks before the
 * sandbox. The search follows the dynamic loader's order (DT_RPATH when there is no DT_RUNPATH,
 * LD_LIBRARY_PATH, DT_RUNPATH, then the system directories), with $ORIGIN expanded. A library
 * found outside the system directories is granted as a file, and its own needs are followed.
 */
#define _GNU_SOURCE
#include "elf_dependencies.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_PROGRAM_HEADERS 256u
#define MAX_DYNAMIC_ENTRIES 4096u
#define MAX_STRING_TABLE (1u << 20)
#define MAX_NEEDED 256u
#define MAX_DEPTH 16

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#endif

/* What one object's dynamic section says. */
typedef struct dynamic_info {
    int audit;                      /* DT_AUDIT or DT_DEPAUDIT present */
    char *strings;                  /* the dynamic string table, NUL-terminated at its end */
    size_t string_size;
    uint64_t needed[MAX_NEEDED];    /* offsets into strings */
    size_t needed_count;
    int64_t rpath, runpath;         /* offsets, -1 when absent */
} dynamic_info;

static int read_at(int fd, void *buffer, size_t length, uint64_t offset) {
    size_t got = 0;
    while (got < length) {
        ssize_t n = pread(fd, (char *)buffer + got, length - got, (off_t)(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    return 0;
}

/* The file offset of virtual address `address`, through the PT_LOAD segments. */
static int file_offset(const Elf64_Phdr *headers, size_t count, uint64_t address, uint64_t *offset) {
    for (size_t i = 0; i < count; i++) {
        const Elf64_Phdr *h = &headers[i];
        if (h->p_type == PT_LOAD && address >= h->p_vaddr && address - h->p_vaddr < h->p_filesz) {
            *offset = h->p_offset + (address - h->p_vaddr);
            return 0;
        }
    }
    return -1;
}

/* Reads `path`'s dynamic section. 0 when it was read; -1 when the file is not a 64-bit ELF
   object of this machine with a readable dynamic section (the loader in the sandbox then says
   why it cannot load it). */
static int read_dynamic(const char *path, dynamic_info *info) {
    memset(info, 0, sizeof *info);
    info->rpath = info->runpath = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return -1;
    int result = -1;
    Elf64_Phdr *headers = NULL;
    Elf64_Dyn *entries = NULL;
    struct stat st;
    Elf64_Ehdr e;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || read_at(fd, &e, sizeof e, 0) != 0) goto done;
    if (memcmp(e.e_ident, ELFMAG, SELFMAG) != 0 || e.e_ident[EI_CLASS] != ELFCLASS64 || e.e_ident[EI_DATA] != ELFDATA2LSB ||
        e.e_machine != HOST_MACHINE || e.e_phentsize != sizeof(Elf64_Phdr) || e.e_phnum == 0 || e.e_phnum > MAX_PROGRAM_HEADERS ||
        e.e_phoff > (uint64_t)st.st_size)
        goto done;
    headers = calloc(e.e_phnum, sizeof *headers);
    if (headers == NULL || read_at(fd, headers, e.e_phnum * sizeof *headers, e.e_phoff) != 0) goto done;
    const Elf64_Phdr *dynamic = NULL;
    for (size_t i = 0; i < e.e_phnum; i++)
        if (headers[i].p_type == PT_DYNAMIC) dynamic = &headers[i];
    if (dynamic == NULL) { result = 0; goto done; } /* nothing needed */
    size_t count = dynamic->p_filesz / sizeof(Elf64_Dyn);
    if (count == 0 || count > MAX_DYNAMIC_ENTRIES || dynamic->p_offset > (uint64_t)st.st_size) goto done;
    entries = calloc(count, sizeof *entries);
    if (entries == NULL || read_at(fd, entries, count * sizeof *entries, dynamic->p_offset) != 0) goto done;
    uint64_t string_address = 0, string_size = 0;
    int have_strings = 0;
    for (size_t i = 0; i < count && entries[i].d_tag != DT_NULL; i++) {
        const Elf64_Dyn *d = &entries[i];
        switch (d->d_tag) {
        case DT_AUDIT:
        case DT_DEPAUDIT: info->audit = 1; break;
        case DT_STRTAB: string_address = d->d_un.d_ptr; have_strings = 1; break;
        case DT_STRSZ: string_size = d->d_un.d_val; break;
        case DT_RPATH: info->rpath = (int64_t)d->d_un.d_val; break;
        case DT_RUNPATH: info->runpath = (int64_t)d->d_un.d_val; break;
        case DT_NEEDED:
            if (info->needed_count == MAX_NEEDED) goto done;
            info->needed[info->needed_count++] = d->d_un.d_val;
            break;
        default: break;
        }
    }
    if (info->needed_count == 0 && info->rpath < 0 && info->runpath < 0) { result = 0; goto done; }
    uint64_t string_offset;
    if (!have_strings || string_size == 0 || string_size > MAX_STRING_TABLE ||
        file_offset(headers, e.e_phnum, string_address, &string_offset) != 0)
        goto done;
    info->strings = malloc(string_size + 1);
    if (info->strings == NULL || read_at(fd, info->strings, string_size, string_offset) != 0) goto done;
    info->strings[string_size] = 0;
    info->string_size = string_size;
    result = 0;
done:
    if (result != 0) { free(info->strings); info->strings = NULL; }
    free(entries);
    free(headers);
    close(fd);
    return result;
}

static const char *string_at(const dynamic_info *info, int64_t offset) {
    if (info->strings == NULL || offset < 0 || (uint64_t)offset >= info->string_size) return NULL;
    return info->strings + offset;
}

/* Where the search state lives while one plugin's needs are followed. */
typedef struct search {
    sandbox_grant *grant;
    const char *library_path; /* LD_LIBRARY_PATH, or NULL */
    char *seen[SANDBOX_MAX_LIBRARIES];
    size_t seen_count;
    const char *refusal; /* the path of an object that carries an audit tag */
} search;

static int already_seen(search *s, const char *path) {
    for (size_t i = 0; i < s->seen_count; i++)
        if (strcmp(s->seen[i], path) == 0) return 1;
    return 0;
}

/* `entry` with $ORIGIN (or ${ORIGIN}) replaced by `origin`; NULL for another $ token, which
   this reader does not expand (the library is then not looked for there). */
static char *expand(const char *entry, size_t length, const char *origin) {
    char out[PATH_MAX];
    size_t n = 0;
    for (size_t i = 0; i < length;) {
        const char *rest = entry + i;
        size_t token = 0;
        if (strncmp(rest, "$ORIGIN", 7) == 0) token = 7;
        else if (strncmp(rest, "${ORIGIN}", 9) == 0) token = 9;
        else if (rest[0] == '$') return NULL;
        const char *piece = token ? origin : rest;
        size_t m = token ? strlen(origin) : 1;
        if (n + m >= sizeof out) return NULL;
        memcpy(out + n, piece, m);
        n += m;
        i += token ? token : 1;
    }
    out[n] = 0;
    return strndup(out, n);
}

/* The first file named `name` in the directories of `list` (colon-separated), resolved, as an
   allocated path; NULL when none is an ELF file there. */
static char *find_in(const char *list, const char *name, const char *origin) {
    if (list == NULL) return NULL;
    for (const char *p = list; *p != 0;) {
        const char *colon = strchr(p, ':');
        size_t length = colon ? (size_t)(colon - p) : strlen(p);
        char *directory = length ? expand(p, length, origin) : NULL;
        if (directory != NULL && directory[0] == '/') {
            char *candidate = NULL;
            if (asprintf(&candidate, "%s/%s", directory, name) > 0) {
                /* The file a link names is what gets mapped, and what is granted. */
                char *real = access(candidate, F_OK) == 0 ? realpath(candidate, NULL) : NULL;
                free(candidate);
                if (real != NULL && sandbox_is_elf_file(real)) { free(directory); return real; }
                free(real);
            }
        }
        free(directory);
        if (colon == NULL) break;
        p = colon + 1;
    }
    return NULL;
}

static const char *const default_directories = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib:/usr/local/lib";

static void follow(search *s, const char *path, int depth);

/* Finds one DT_NEEDED name as the dynamic loader would for the object `info` describes (in
   directory `origin`), and follows it. */
static void resolve(search *s, const dynamic_info *info, const char *name, const char *origin, int depth) {
    char *found = NULL;
    if (strchr(name, '/') != NULL) {
        char *real = name[0] == '/' ? realpath(name, NULL) : NULL;
        if (real != NULL && sandbox_is_elf_file(real)) found = real;
        else free(real);
    } else {
        if (info->runpath < 0) found = find_in(string_at(info, info->rpath), name, origin);
        if (found == NULL) found = find_in(s->library_path, name, origin);
        if (found == NULL) found = find_in(string_at(info, info->runpath), name, origin);
        if (found == NULL) found = find_in(default_directories, name, origin);
    }
    if (found == NULL) return; /* the loader in the sandbox says it is missing */
    follow(s, found, depth + 1);
    free(found);
}

/* Grants `path` (outside the system directories) and follows what it needs. */
static void follow(search *s, const char *path, int depth) {
    if (depth > MAX_DEPTH || s->refusal != NULL || already_seen(s, path) || s->seen_count == SANDBOX_MAX_LIBRARIES) return;
    char *kept = strdup(path);
    if (kept == NULL) return;
    s->seen[s->seen_count++] = kept;
    int system = sandbox_is_system_library(path);
    /* The plugin itself (depth 0) is granted by the sandbox; its libraries are granted here. */
    if (depth > 0 && !system && s->grant->library_count < SANDBOX_MAX_LIBRARIES) s->grant->library[s->grant->library_count++] = kept;
    dynamic_info info;
    if (read_dynamic(path, &info) != 0) return;
    if (info.audit) { s->refusal = kept; free(info.strings); return; }
    /* The system directories are granted whole, and what their libraries need is there too. */
    if (!system || depth == 0) {
        char origin[PATH_MAX];
        char *real = realpath(path, NULL);
        const char *slash = real ? strrchr(real, '/') : NULL;
        if (slash != NULL) {
            size_t n = (size_t)(slash - real);
            memcpy(origin, real, n);
            origin[n] = 0;
            for (size_t i = 0; i < info.needed_count; i++) {
                const char *name = string_at(&info, (int64_t)info.needed[i]);
                if (name != NULL && name[0] != 0) resolve(s, &info, name, origin, depth);
            }
        }
        free(real);
    }
    free(info.strings);
}

int elf_add_dependencies(const char *plugin_path, const char *library_path, sandbox_grant *grant, const char **audited) {
    search s = { .grant = grant, .library_path = library_path };
    follow(&s, plugin_path, 0);
    *audited = s.refusal;
    /* The paths granted stay for the helper's life; the others go. */
    for (size_t i = 0; i < s.seen_count; i++) {
        int granted = 0;
        for (size_t k = 0; k < grant->library_count; k++)
            if (grant->library[k] == s.seen[i]) granted = 1;
        if (!granted && s.seen[i] != s.refusal) free(s.seen[i]);
    }
    return s.refusal != NULL ? -1 : 0;
}
