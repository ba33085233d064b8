// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_lazy_library.h — a library a plugin opens on first use, not at load: loading a plugin
 * then maps libc and libsodium only, and a process that never reaches the library (it lists
 * plugins, or its store is on another root) never maps it and its dependencies.
 *
 * A plugin lists the functions it calls once, X(name) or X(name, result, parameters), and
 * makes from that list a table of pointers, and the library that fills it:
 *
 *   #define F2_FUNCTIONS(X) X(fido_init) X(fido_dev_new) ...
 *   static struct { F2_FUNCTIONS(KEYBAY_LAZY_POINTER) } f2_lib;
 *   KEYBAY_LAZY_LIBRARY(f2_library, "libfido2.so.1", RTLD_NOW, f2_lib, F2_FUNCTIONS, KEYBAY_LAZY_NAME);
 *   ...
 *   const char *why = keybay_lazy_library_open(&f2_library);   (NULL: f2_lib is filled)
 *
 * Not installed, not part of the ABI; linked into each plugin, exported by none.
 */
#ifndef KEYBAY_LAZY_LIBRARY_H
#define KEYBAY_LAZY_LIBRARY_H

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

/* The table's member for a function declared by the library's own header (typeof keeps the
   prototype), or for one the plugin declares itself (no header: result and parameters given). */
#define KEYBAY_LAZY_POINTER(name) __typeof__(name) *name;
#define KEYBAY_LAZY_TYPED_POINTER(name, result, parameters) result(*name) parameters;
/* The symbol to resolve for that member, in the same order. */
#define KEYBAY_LAZY_NAME(name) #name,
#define KEYBAY_LAZY_TYPED_NAME(name, result, parameters) #name,

typedef struct keybay_lazy_library {
    const char *soname;
    int mode;                 /* RTLD_NOW or RTLD_LAZY (RTLD_LOCAL is added) */
    const char *const *names; /* the symbols, in the order of the table's members */
    size_t count;
    void **table;             /* count function pointers; left all NULL unless every one resolved */
    pthread_mutex_t lock;
    int state;                /* 0: not tried yet, 1: open, -1: failed (error says why) */
    char error[256];
} keybay_lazy_library;

/* Declares `variable`, a library opened with `mode` whose functions, the list FUNCTIONS (made
   into names by NAME: KEYBAY_LAZY_NAME or KEYBAY_LAZY_TYPED_NAME), fill `table` (a struct of
   function pointers made from the same list: one per name, checked at compile time). */
#define KEYBAY_LAZY_LIBRARY(variable, soname, mode, table, FUNCTIONS, NAME)                              \
    static const char *const variable##_names[] = {FUNCTIONS(NAME)};                                      \
    _Static_assert(sizeof(table) == sizeof(variable##_names) / sizeof(variable##_names[0]) * sizeof(void *), \
                   "one function pointer per name");                                                      \
    static keybay_lazy_library variable = {(soname), (mode), variable##_names,                            \
                                           sizeof(variable##_names) / sizeof(variable##_names[0]),         \
                                           (void **)&(table), PTHREAD_MUTEX_INITIALIZER, 0, ""}

#pragma GCC visibility push(hidden)

/* Opens the library and resolves every symbol, once per process (every call after the first
   answers as the first did; safe from any thread). NULL when the table is filled (the handle
   stays open for the life of the process); else why not, as one line: dlopen's or dlsym's error
   (which names the library, and the missing symbol), or "<soname> has no <symbol>". */
const char *keybay_lazy_library_open(keybay_lazy_library *library);

#pragma GCC visibility pop

#endif /* KEYBAY_LAZY_LIBRARY_H */
