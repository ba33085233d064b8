// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin

/// This build of Keybay, as `keybay-methods --version` prints it.
public enum KeybayVersion {
    /// The release: major.minor.patch.
    public static let release = "1.2.0"
    /// The plugin ABI this build loads (`KEYBAY_PLUGIN_ABI_VERSION`, docs/plugins.md).
    public static let pluginABI = Int(KEYBAY_PLUGIN_ABI_VERSION)
}
