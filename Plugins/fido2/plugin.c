// SPDX-License-Identifier: Apache-2.0
/*
 * libkeybay-fido2.so — the first-party `fido2` method plugin (Keybay plugin ABI v1): M is the
 * hmac-secret output of a credential on a FIDO2 security key (libfido2, real HID devices).
 * The method itself, its public parameters, modes and errors are in
 * Plugins/Support/fido2-core/fido2_core.c; this file only names the plugin. It does not link libfido2: the core opens libfido2.so.1 on first
 * use, so loading the plugin stays cheap and a process that only lists plugins or uses other
 * methods never maps libfido2 and its dependencies.
 *
 * Only keybay_plugin_entry_v1 is exported.
 */
#include "keybay_fido2_core.h"
#include "keybay_plugin.h"

/* libfido2 finds keys through libudev: the hidraw nodes, their sysfs entries and udev's database. */
static const char *const f2_sandbox[] = {"device:/dev/hidraw*", "read:/sys", "read:/run/udev", NULL};

static const keybay_plugin f2_plugin = KEYBAY_FIDO2_DESCRIPTOR("fido2", "FIDO2 security key (hmac-secret)", f2_sandbox);

KEYBAY_PLUGIN_ENTRY(f2_plugin)
