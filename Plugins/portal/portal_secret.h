// SPDX-License-Identifier: Apache-2.0
/*
 * The portal root's conversation with the XDG Secret portal (portal_secret.c): GIO opened on
 * first use, org.freedesktop.portal.Secret.RetrieveSecret over GDBus with a GUnixFDList, bounded
 * in time. What the secret becomes is portal.c's.
 */
#ifndef KEYBAY_PORTAL_SECRET_H
#define KEYBAY_PORTAL_SECRET_H

#include <stddef.h>
#include <stdint.h>

#include "keybay_plugin.h"

#define SECRET_MIN_BYTES 32
#define SECRET_MAX_BYTES 1024
#define PORTAL_TIMEOUT_MS 10000
#define PORTAL_NAME "the XDG Secret portal (org.freedesktop.portal.Secret of org.freedesktop.portal.Desktop on the session bus)"

#pragma GCC visibility push(hidden)

/* Milliseconds of the monotonic clock, which every wait of the plugin is bounded by. */
int64_t now_ms(void);

/* This sandbox's secret from the portal, in guarded memory (*secret_out, SECRET_MIN_BYTES to
   SECRET_MAX_BYTES long), within PORTAL_TIMEOUT_MS; NOT_AVAILABLE when GIO, the session bus or
   the portal is missing, refuses or does not answer. */
keybay_status retrieve_secret(const keybay_host *host, uint8_t **secret_out, size_t *length_out);

#pragma GCC visibility pop

#endif /* KEYBAY_PORTAL_SECRET_H */
