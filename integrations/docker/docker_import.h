/*
 * SPDX-License-Identifier: Apache-2.0
 * `docker-credential-keybay import`: the credentials in Docker's config.json brought into the store.
 */
#ifndef KEYBAY_DOCKER_IMPORT_H
#define KEYBAY_DOCKER_IMPORT_H

/* argv[0..argc) are the arguments after `import`: [--replace] [--dry-run] [--remove-source]
 * [CONFIG]. Returns the exit status. */
int docker_import(const char *app, int argc, char **argv);

#endif
