// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Keybay",
    products: [
        .library(name: "Keybay", targets: ["Keybay"]),
        .executable(name: "keybay-methods", targets: ["keybay-methods"]),
        // Method plugins, each a dlopen-able libkeybay-<id>.so exporting keybay_plugin_entry_v1.
        .library(name: "keybay-passphrase", type: .dynamic, targets: ["KeybayPassphrase"]),
    ],
    targets: [
        // C libraries from Debian. The core links libsodium only; libargon2 and libfido2 are
        // for the plugins that need them (see Plugins/README.md).
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CArgon2", pkgConfig: "libargon2", providers: [.apt(["libargon2-dev"])]),
        .systemLibrary(name: "CFido2", pkgConfig: "libfido2", providers: [.apt(["libfido2-dev"])]),

        // The plugin ABI: Sources/CKeybayPlugin/include/keybay_plugin.h.
        .target(name: "CKeybayPlugin", path: "Sources/CKeybayPlugin"),

        .target(name: "Keybay", dependencies: ["CSodium"]),

        // The passphrase method plugin (C11, Argon2id via libargon2); only the entry is exported.
        .target(name: "KeybayPassphrase", dependencies: ["CKeybayPlugin", "CArgon2", "CSodium"],
                path: "Plugins/passphrase", linkerSettings: [.linkedLibrary("m")]),

        .executableTarget(name: "keybay-methods", dependencies: ["Keybay"]),

        .executableTarget(name: "keybay-example-host", dependencies: ["Keybay"], path: "Examples/HostApp"),

        .testTarget(name: "KeybayTests", dependencies: ["Keybay"]),
    ],
    swiftLanguageModes: [.v6]
)
