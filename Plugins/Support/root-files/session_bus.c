// SPDX-License-Identifier: Apache-2.0
/* The session-bus check of the roots that talk D-Bus (secret-service, portal): see
   include/keybay_root_files.h. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keybay_root_files.h"

/* GLib, asked for the session bus while DBUS_SESSION_BUS_ADDRESS is unset, uses
   $XDG_RUNTIME_DIR/bus when that is a socket owned by this user, and otherwise, with DISPLAY set,
   runs `dbus-launch --autolaunch` from PATH (which starts a bus, and with it whatever that bus
   activates); an address whose transport is autolaunch: (or unixexec:, in newer GLib) runs a
   program too. So without an address this goes on only where GLib's own check will pick
   $XDG_RUNTIME_DIR/bus (the same stat: a socket whose owner is the effective user), and an
   address naming one of those transports is refused: NOT_AVAILABLE either way, before GLib looks. */
keybay_status keybay_rf_check_session_bus(const keybay_host *host, const char *root_id, const char *service) {
    const char *address = getenv("DBUS_SESSION_BUS_ADDRESS");
    if (address == NULL) {
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        char bus[4096];
        struct stat st;
        if (runtime == NULL || runtime[0] != '/' || (size_t)snprintf(bus, sizeof bus, "%s/bus", runtime) >= sizeof bus ||
            stat(bus, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
            return keybay_rf_fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no session bus for %s: DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus is not a socket of this user (the %s root never launches a bus)", service, root_id);
        return KEYBAY_OK;
    }
    for (const char *entry = address; *entry;) {
        size_t length = strcspn(entry, ";");
        if ((length >= 11 && strncmp(entry, "autolaunch:", 11) == 0) || (length >= 9 && strncmp(entry, "unixexec:", 9) == 0))
            return keybay_rf_fail(host, KEYBAY_ERR_NOT_AVAILABLE, "DBUS_SESSION_BUS_ADDRESS names a transport that runs a program (autolaunch: or unixexec:); the %s root never launches a bus, so it does not use %s there", root_id, service);
        entry += length;
        if (*entry == ';') entry++;
    }
    return KEYBAY_OK;
}
