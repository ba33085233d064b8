// SPDX-License-Identifier: Apache-2.0

/// Entry points for the libFuzzer targets under Fuzz/ (SPI, not API): each feeds untrusted bytes
/// to one strict decoder. A decoder may throw; it must never crash, hang or allocate without a bound.
@_spi(Fuzzing)
public enum KeybayFuzzing {
    /// The store file: layout, then the manifest and both package plaintexts over the same bytes.
    public static func decodeStore(_ bytes: [UInt8]) {
        if let layout = try? StoreLayout.decode(bytes, context: "fuzz") {
            _ = layout.bootstrap.bytes
        }
        _ = try? Manifest.decode(bytes, context: "fuzz")
        if !bytes.isEmpty {
            _ = try? PlatformPackage.decode(SecureBytes(copying: bytes), context: "fuzz")
        }
    }

    /// The suite-2 methods package plaintext.
    public static func decodeMethodsPackage(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        if let package = try? MethodsPackage.decode(SecureBytes(copying: bytes), context: "fuzz") {
            _ = package.encode()
        }
    }

    /// A method plugin's parameter decoder, reached through its `describe` (side-effect free).
    /// In process: libFuzzer follows the plugin's branches only in the fuzzer's own process.
    public static func describeParameters(plugin id: String, directory: String, _ bytes: [UInt8]) {
        guard let plugin = try? MethodResolver(search: KeybayPluginSearch(directories: [directory], environmentPath: nil, isolation: .inProcess)).method(id) else {
            fatalError("fuzz: cannot load plugin \(id) from \(directory)")
        }
        _ = try? plugin.describe(params: bytes)
    }
}
