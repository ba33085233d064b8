/*
 * SPDX-License-Identifier: Apache-2.0
 * `git-credential-keybay import`: git's `store` helper's files brought into the store.
 */
#ifndef KEYBAY_GIT_IMPORT_H
#define KEYBAY_GIT_IMPORT_H

/* argv[0..argc) are the arguments after `import`: [--replace] [--dry-run] [--remove-source]
 * [FILE...]. Returns the exit status. */
int git_import(const char *app, int argc, char **argv);

#endif
