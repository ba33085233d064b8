// swift-tools-version:6.0
// SPDX-License-Identifier: Apache-2.0
import PackageDescription

// Runtimes linked statically: the Swift runtime, libstdc++ and libgcc. Every shared library
// loaded at start-up is time `keybay-methods get` spends before doing anything; scripts/link
// holds a linker script that turns swiftc's -lstdc++ into the static archive.
//
// The C plugins are linked by swiftc too, which would make each depend on libswiftCore.so and
// libstdc++.so and run a Swift image constructor: dlopen'ing them would load those into hosts
// that do not have them. Without the Swift start-up object and with the static archives, from
// which a C library takes nothing, they depend on the C libraries they use and libc only.
//
// Static linking hides the archives' symbols (--exclude-libs ALL), the sanitizer runtimes'
// interceptors included, which breaks sanitized builds: scripts/sanitizers.sh sets
// KEYBAY_SANITIZE and gets the ordinary dynamic linking.
let sanitizing = Context.environment["KEYBAY_SANITIZE"] != nil
let staticRuntimes = ["-static-stdlib", "-L", Context.packageDirectory + "/scripts/link", "-Xclang-linker", "-static-libgcc"]
let cPluginLinking: [LinkerSetting] = sanitizing ? [] : [.unsafeFlags(["-nostartfiles"] + staticRuntimes)]
// The CLI and libkeybay carry the Swift runtime, so tens of thousands of relative relocations
// that the dynamic loader applies on every start: lld packs them (DT_RELR, glibc 2.36 or later),
// which took about 7 % of a `get`'s instructions and 10 % of its page faults away. gold cannot.
let packedRelocations = ["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"]
let cliLinking: [LinkerSetting] = sanitizing ? [] : [.unsafeFlags(staticRuntimes + packedRelocations)]
// libkeybay.so.1, the C API: its soname, and a version script that exports keybay_* alone (the
// Swift runtime, linked statically, stays inside it, so it needs no Swift toolchain at run time).
let cLibraryLinking: [LinkerSetting] = [.unsafeFlags(["-Xlinker", "-soname=libkeybay.so.1",
                                                      "-Xlinker", "--version-script=" + Context.packageDirectory + "/scripts/link/libkeybay.map"]
                                                     + (sanitizing ? [] : staticRuntimes + packedRelocations))]

let package = Package(
    name: "Keybay",
    products: [
        .library(name: "Keybay", targets: ["Keybay"]),
        .executable(name: "keybay-methods", targets: ["keybay-methods"]),
        .executable(name: "keybay-plugin-host", targets: ["keybay-plugin-host"]),
        // Plugins: one dynamic library each, found at run time as libkeybay-<id>.so, exporting
        // keybay_plugin_entry_v1.
        .library(name: "keybay-file-root", type: .dynamic, targets: ["KeybayFileRoot"]),
        .library(name: "keybay-passphrase", type: .dynamic, targets: ["KeybayPassphrase"]),
        .library(name: "keybay-fido2", type: .dynamic, targets: ["KeybayFido2"]),
        .library(name: "keybay-recovery", type: .dynamic, targets: ["KeybayRecovery"]),
        .library(name: "keybay-tpm2", type: .dynamic, targets: ["KeybayTPM2"]),
        .library(name: "keybay-tpm2-pin", type: .dynamic, targets: ["KeybayTPM2Pin"]),
        .library(name: "keybay-secret-service", type: .dynamic, targets: ["KeybaySecretService"]),
        .library(name: "keybay-pkcs11", type: .dynamic, targets: ["KeybayPkcs11"]),
        .library(name: "keybay-portal", type: .dynamic, targets: ["KeybayPortal"]),
        .library(name: "KeybayPluginKit", targets: ["KeybayPluginKit"]),
        .library(name: "KeybayPrompt", targets: ["KeybayPrompt"]),
        // The C API for hosts in any language: libkeybay.so (installed as libkeybay.so.1),
        // include/keybay/keybay.h (Sources/CKeybay), keybay.pc; docs/c-api.md.
        .library(name: "keybay", type: .dynamic, targets: ["KeybayCAPI"]),
        // Plugins for tests only, built as libkeybaytest-<name>.so: not a plugin file name, so the
        // CLI in the build directory (which searches its own directory) never lists them. The
        // tests copy them under their plugin file names (libkeybay-test-<name>.so) into a
        // directory of their own and name it (TestSupport.swift, testPluginDirectory).
        // test-counting: a method plugin that counts its calls.
        .library(name: "keybaytest-counting", type: .dynamic, targets: ["KeybayTestCounting"]),
        // test-ceremony: a method plugin that waits, for the async-ceremony tests alone.
        .library(name: "keybaytest-ceremony", type: .dynamic, targets: ["KeybayTestCeremony"]),
        // test-fido2: the fido2 method on an in-process virtual CTAP2 authenticator.
        .library(name: "keybaytest-fido2", type: .dynamic, targets: ["KeybayTestFido2"]),
        // test-floor-crash: a root that wraps another and can die just before the rollback floor rises.
        .library(name: "keybaytest-floor-crash", type: .dynamic, targets: ["KeybayTestFloorCrash"]),
    ],
    targets: [
        // C libraries from Debian. The core links libsodium only; libargon2 is for the
        // passphrase plugin, libfido2 for the test authenticator (the fido2 plugin opens it at
        // run time; see Plugins/README.md).
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CArgon2", pkgConfig: "libargon2", providers: [.apt(["libargon2-dev"])]),
        .systemLibrary(name: "CFido2", pkgConfig: "libfido2", providers: [.apt(["libfido2-dev"])]),
        // OpenSSL's libcrypto, for the virtual FIDO2 authenticator (test support only).
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // The plugin ABI: Sources/CKeybayPlugin/include/keybay_plugin.h.
        .target(name: "CKeybayPlugin", path: "Sources/CKeybayPlugin"),

        // SHA-256 with the x86 SHA extensions when the CPU has them (libsodium 1.0.18's portable
        // SHA-256 bounds the speed of reading a store: every frame is committed by its digest).
        .target(name: "CKeybaySHA256", path: "Sources/CKeybaySHA256"),

        // Where the code is loaded from (dladdr): the plugin search looks beside libkeybay.so.1.
        .target(name: "CKeybayImage", path: "Sources/CKeybayImage", linkerSettings: [.linkedLibrary("dl")]),
        // Extended attributes and the nodump flag, for the backup markers (libc only).
        .target(name: "CKeybayFileAttributes", path: "Sources/CKeybayFileAttributes"),
        // What the keybay agent and its clients need of Linux beyond Swift's Glibc module: peer
        // credentials, accept4, the dumpable flag, a detached start (libc only).
        .target(name: "CKeybayAgent", path: "Sources/CKeybayAgent"),
        // Method plugins out of process (docs/plugins.md, "Isolation"): the framing both sides
        // speak and the host's proxy, and the sandboxed helper, installed under libexec/keybay. The
        // helper is linked like the C plugins (no Swift start-up object, static archives it takes
        // nothing from): a Swift runtime in it would clash with the one a Swift plugin loads.
        .target(name: "CKeybayPluginIsolation", dependencies: ["CKeybayPlugin"], path: "Sources/CKeybayPluginIsolation",
                linkerSettings: [.linkedLibrary("pthread")]),
        .executableTarget(name: "keybay-plugin-host", dependencies: ["CKeybayPluginIsolation", "CKeybayPlugin"],
                          path: "Sources/keybay-plugin-host", linkerSettings: [.linkedLibrary("dl")] + cPluginLinking),
        .target(name: "Keybay", dependencies: ["CSodium", "CKeybayPlugin", "CKeybaySHA256", "CKeybayImage", "CKeybayFileAttributes", "CKeybayAgent",
                                               "CKeybayPluginIsolation"]),
        // The user interface the library leaves to hosts: the controlling terminal (echo off), a
        // pinentry program (Assuan), and the default interaction choosing between them. The CLI
        // and the C API link it; a Swift host that wants it imports KeybayPrompt, and one that
        // imports Keybay alone links no terminal or pinentry code.
        .target(name: "KeybayPrompt", dependencies: ["Keybay", "CSodium"]),
        // The C API: its header (a C target of its own, so the Swift side reads the same types
        // the hosts compile against) and the @_cdecl functions over the public Swift API.
        .target(name: "CKeybay", path: "Sources/CKeybay"),
        .target(name: "CKeybayValueArena", dependencies: ["CSodium"], path: "Sources/CKeybayValueArena"),
        .target(name: "KeybayCAPI", dependencies: ["Keybay", "KeybayPrompt", "CKeybay", "CKeybayValueArena", "CSodium"], linkerSettings: cLibraryLinking),

        // plugin-check's table of conformance checks: linked by the CLI, no product (not API of
        // the library); it reaches the loader through Keybay's package-access PluginUnderCheck.
        .target(name: "KeybayConformance", dependencies: ["Keybay", "CKeybayPlugin"]),
        // The Secret Service's items for `import secret-service` (the CLI alone): libsecret-1 opened on first use.
        .target(name: "CKeybaySecretItems", path: "Sources/CKeybaySecretItems", linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]),
        // The CLI links its runtimes statically (cliLinking above, docs/performance.md).
        .executableTarget(name: "keybay-methods", dependencies: ["Keybay", "KeybayPrompt", "KeybayConformance", "CSodium", "CKeybayAgent", "CKeybaySecretItems"],
                         linkerSettings: cliLinking),

        // First-party plugins (C11). file-root: the TPM-less platform root. passphrase: Argon2id
        // via libargon2, the only piece that links it.
        // What the plugins share (Plugins/Support): here a library opened on first use, the
        // descriptor's common fields, private directories; linked into each, exported by none.
        .target(name: "CKeybayPluginSupport", dependencies: ["CKeybayPlugin"], path: "Plugins/Support/common",
                linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]),
        // The private files of the first-party roots (<state_home>/keybay/<app>/), linked into each.
        .target(name: "CKeybayRootFiles", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CSodium"], path: "Plugins/Support/root-files"),
        .target(name: "KeybayFileRoot", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CKeybayRootFiles", "CSodium"], path: "Plugins/file-root", publicHeadersPath: ".",
                linkerSettings: cPluginLinking),
        // tpm2: the root sealed by this machine's TPM. It includes tpm2-tss's headers for types only
        // and opens libtss2-esys and friends on first use (Plugins/README.md); tss2-dev's headers
        // come from libtss2-dev.
        // The TPM connection both TPM plugins link (tpm2-tss opened on first use, the choice of TPM,
        // the time bound, taking turns, the storage primary).
        .target(name: "CKeybayTPM2", dependencies: ["CKeybayPlugin", "CKeybayRootFiles", "CSodium"], path: "Plugins/Support/tpm2",
                linkerSettings: [.linkedLibrary("pthread")]),
        .target(name: "KeybayTPM2", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CKeybayRootFiles", "CKeybayTPM2", "CKeybayRecoveryKey", "CSodium"], path: "Plugins/tpm2", publicHeadersPath: ".",
                linkerSettings: [.linkedLibrary("pthread")] + cPluginLinking),
        // tpm2-pin: a method whose 32-byte secret the TPM unseals only with the user's PIN, under
        // the TPM's dictionary-attack protection.
        .target(name: "KeybayTPM2Pin", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CKeybayRootFiles", "CKeybayTPM2", "CSodium"], path: "Plugins/tpm2-pin",
                publicHeadersPath: ".", linkerSettings: [.linkedLibrary("pthread")] + cPluginLinking),
        .target(name: "KeybayPassphrase", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CArgon2", "CSodium"],
                path: "Plugins/passphrase", linkerSettings: [.linkedLibrary("m")] + cPluginLinking),
        // fido2: the method (core, with a replaceable device opener) and the shipped plugin. The
        // core includes <fido.h> for its types but links nothing of libfido2: it opens
        // libfido2.so.1 on first use (Plugins/README.md).
        .target(name: "KeybayFido2Core", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CSodium"], path: "Plugins/Support/fido2-core",
                linkerSettings: [.linkedLibrary("pthread")]),
        .target(name: "KeybayFido2", dependencies: ["KeybayFido2Core"], path: "Plugins/fido2", publicHeadersPath: ".", linkerSettings: cPluginLinking),
        // recovery: a 256-bit recovery key (libsodium only); it opens libqrencode.so.4 on first
        // use to draw the key as a QR code, and does without when it is missing.
        .target(name: "KeybayRecovery", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CKeybayRecoveryKey", "CSodium"], path: "Plugins/recovery", publicHeadersPath: ".",
                linkerSettings: cPluginLinking),
        // The recovery key's text and QR code, shared by recovery and the tpm2 root's recovery.
        .target(name: "CKeybayRecoveryKey", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CSodium"], path: "Plugins/Support/recovery-key",
                linkerSettings: [.linkedLibrary("pthread"), .linkedLibrary("dl")]),
        // secret-service: the desktop keyring as platform root. It declares the few libsecret and
        // GLib types it uses and links neither: it opens libsecret-1.so.0 on first use.
        .target(name: "KeybaySecretService", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CKeybayRootFiles", "CSodium"], path: "Plugins/secret-service",
                publicHeadersPath: ".", linkerSettings: cPluginLinking),
        // pkcs11: a key on a PKCS#11 token. It includes p11-kit's headers (PKCS#11 and p11-kit types
        // only; libp11-kit-dev) and links neither p11-kit nor a module: it opens libp11-kit.so.0,
        // and a module named with --opt module=PATH, on first use.
        .target(name: "KeybayPkcs11", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CSodium"], path: "Plugins/pkcs11", publicHeadersPath: ".",
                cSettings: [.unsafeFlags(["-I/usr/include/p11-kit-1"])], linkerSettings: cPluginLinking),
        // portal: the XDG Secret portal as platform root inside a Flatpak or snap sandbox. It
        // declares the few GLib and GIO types it uses and links neither: it opens
        // libgio-2.0.so.0 on first use.
        .target(name: "KeybayPortal", dependencies: ["CKeybayPlugin", "CKeybayPluginSupport", "CKeybayRootFiles", "CSodium"], path: "Plugins/portal",
                publicHeadersPath: ".", linkerSettings: cPluginLinking),

        // The Swift kit for plugin authors, and a test plugin written with it.
        .target(name: "KeybayPluginKit", dependencies: ["CKeybayPlugin"]),
        .target(name: "KeybayTestCounting", dependencies: ["KeybayPluginKit", "CSodium"], path: "Tests/TestPlugins/counting"),
        .target(name: "KeybayTestCeremony", dependencies: ["KeybayPluginKit", "CSodium"], path: "Tests/TestPlugins/ceremony"),
        // One API write per process, for the crash-kill harness.
        .executableTarget(name: "keybay-test-writer", dependencies: ["Keybay"], path: "Tests/TestTools/writer"),
        // A virtual CTAP2 authenticator reached through libfido2's io/transport hooks, and the
        // fido2 core wired to it (test-fido2).
        .target(name: "KeybayVirtualAuthenticator", dependencies: ["CFido2", "CCrypto"], path: "Tests/VirtualAuthenticator",
                linkerSettings: [.linkedLibrary("pthread")]),
        .target(name: "KeybayTestFido2", dependencies: ["KeybayFido2Core", "KeybayVirtualAuthenticator"],
                path: "Tests/TestPlugins/fido2-virtual", publicHeadersPath: ".", linkerSettings: cPluginLinking),

        .target(name: "KeybayTestFloorCrash", dependencies: ["CKeybayPlugin"], path: "Tests/TestPlugins/floor-crash",
                publicHeadersPath: ".", linkerSettings: cPluginLinking),

        // Side-by-side speed ratios (links libargon2 for the bare reference call; the core does not).
        .executableTarget(name: "keybay-bench", dependencies: ["Keybay", "CArgon2"]),

        .testTarget(name: "KeybayTests", dependencies: ["Keybay", "KeybayPrompt", "KeybayConformance", "CKeybaySHA256", "CKeybayAgent"]),
    ],
    swiftLanguageModes: [.v6]
)

// libFuzzer targets (scripts/fuzz.sh). They have no main, so they exist only in fuzzing builds:
// KEYBAY_FUZZ=1 swift build -c release --product keybay-fuzz-store --sanitize=fuzzer ...
if Context.environment["KEYBAY_FUZZ"] != nil {
    for (name, path) in [("keybay-fuzz-store", "Fuzz/store"), ("keybay-fuzz-methods-package", "Fuzz/methods-package"),
                         ("keybay-fuzz-passphrase-params", "Fuzz/passphrase-params"), ("keybay-fuzz-fido2-params", "Fuzz/fido2-params"),
                         ("keybay-fuzz-pkcs11-params", "Fuzz/pkcs11-params")] {
        package.targets.append(.executableTarget(name: name, dependencies: ["Keybay"], path: path, exclude: ["corpus"]))
        package.products.append(.executable(name: name, targets: [name]))
    }
}
