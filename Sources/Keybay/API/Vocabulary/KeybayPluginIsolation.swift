// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Where a method plugin runs (docs/plugins.md, "Isolation").
public enum KeybayPluginIsolation: Sendable, Equatable {
    /// In `keybay-plugin-host`, one helper process per plugin and host process, sandboxed before
    /// the plugin is loaded: a plugin that crashes, hangs or misbehaves fails its call with
    /// `.pluginFailed`, and the host and its other stores carry on.
    case isolated
    /// In the host process, as root plugins always run.
    case inProcess

    /// `.inProcess` when `KEYBAY_PLUGIN_ISOLATION` is `none`, else `.isolated`.
    public static var fromEnvironment: KeybayPluginIsolation {
        getenv("KEYBAY_PLUGIN_ISOLATION").map { String(cString: $0) } == "none" ? .inProcess : .isolated
    }
}
