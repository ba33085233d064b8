// swift-tools-version:6.0
// SPDX-License-Identifier: Apache-2.0
// A host application built outside the Keybay package, against it:
//   cd Examples/HostApp && swift build
//   KEYBAY_PLUGIN_PATH=/path/to/keybay/.build/debug .build/debug/keybay-example-host
// (after `make install` the plugins are found in /usr/local/lib/keybay/plugins without it).
import PackageDescription

let package = Package(
    name: "keybay-example-host",
    dependencies: [.package(name: "Keybay", path: "../..")],
    targets: [
        .executableTarget(name: "keybay-example-host", dependencies: [.product(name: "Keybay", package: "Keybay")], path: "Sources"),
        // A recovery key in two phases, and KeybayError's fields.
        .executableTarget(name: "keybay-example-recovery", dependencies: [.product(name: "Keybay", package: "Keybay")], path: "Recovery"),
    ],
    swiftLanguageModes: [.v6]
)
