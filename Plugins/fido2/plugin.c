/*
 * libkeybay-fido2.so — the first-party `fido2` method plugin (Keybay plugin ABI v1): M is the
 * hmac-secret output of a credential on a FIDO2 security key (libfido2, real HID devices).
 * The method itself, its public parameters, modes and errors are in core/fido2_core.c; this
 * file only names the plugin. It is the only library of the project that links libfido2.
 *
 * Only keybay_plugin_entry_v1 is exported.
 */
#include "keybay_fido2_core.h"
#include "keybay_plugin.h"

static const keybay_plugin f2_plugin = {
    .abi_version = KEYBAY_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(keybay_plugin),
    .id = "fido2",
    .name = "FIDO2 security key (hmac-secret)",
    .version = "1.0",
    .kind = KEYBAY_KIND_METHOD,
    .flags = KEYBAY_FLAG_INTERACTIVE | KEYBAY_FLAG_NEEDS_DEVICE,
    .options = keybay_fido2_option_specs,
    .option_count = KEYBAY_FIDO2_OPTION_COUNT,
    .free_buffer = keybay_fido2_free_buffer,
    .probe = keybay_fido2_probe,
    .enroll = keybay_fido2_enroll,
    .unwrap = keybay_fido2_unwrap,
    .verify = keybay_fido2_unwrap,
    .describe = keybay_fido2_describe,
};

__attribute__((visibility("default"))) const keybay_plugin *keybay_plugin_entry_v1(void) {
    return &f2_plugin;
}
