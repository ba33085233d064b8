// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Keybay",
    products: [
        .library(name: "Keybay", targets: ["Keybay"]),
        .executable(name: "keybay-methods", targets: ["keybay-methods"]),
        // Plugins: one dynamic library each, found at run time as libkeybay-<id>.so.
        .library(name: "keybay-file-root", type: .dynamic, targets: ["KeybayFileRoot"]),
        .library(name: "KeybayPluginKit", targets: ["KeybayPluginKit"]),
        // A method plugin for tests only (counts its calls); built so tests can dlopen it.
        .library(name: "keybay-test-counting", type: .dynamic, targets: ["KeybayTestCounting"]),
    ],
    targets: [
        // C libraries from Debian. The core links libsodium only; libargon2 and libfido2 are
        // for the plugins that need them (see Plugins/README.md).
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CArgon2", pkgConfig: "libargon2", providers: [.apt(["libargon2-dev"])]),
        .systemLibrary(name: "CFido2", pkgConfig: "libfido2", providers: [.apt(["libfido2-dev"])]),

        // The plugin ABI: one public C header.
        .target(name: "CKeybayPlugin", path: "Sources/CKeybayPlugin"),

        .target(name: "Keybay", dependencies: ["CSodium", "CKeybayPlugin"]),

        .target(name: "KeybayPluginKit", dependencies: ["CKeybayPlugin"]),
        .target(name: "KeybayTestCounting", dependencies: ["KeybayPluginKit", "CSodium"], path: "Tests/TestPlugins/counting"),
        .target(name: "KeybayFileRoot", dependencies: ["CKeybayPlugin", "CSodium"], path: "Plugins/file-root", publicHeadersPath: "."),
        .executableTarget(name: "keybay-methods", dependencies: ["Keybay", "CSodium"]),

        .executableTarget(name: "keybay-example-host", dependencies: ["Keybay"], path: "Examples/HostApp"),

        .testTarget(name: "KeybayTests", dependencies: ["Keybay"]),
    ],
    swiftLanguageModes: [.v6]
)
