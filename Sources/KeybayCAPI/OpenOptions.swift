// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Keybay

/// A caller's `keybay_open_options`, checked and read into a configuration.
struct OpenOptions {
    let configuration: KeybayConfiguration
    let methodID: String?
    let noInput: Bool
    /// Asks in all for a wrong secret (1 unless the caller's struct has `tries`).
    let tries: Int

    init(_ pointer: UnsafePointer<keybay_open_options>?) throws {
        guard let pointer else { throw invalidArgument("keybay_open_options is NULL") }
        // struct_size is read as bytes, and only the fields it covers are copied: the caller's
        // struct may be shorter than this header's, and a later one longer.
        let raw = UnsafeRawPointer(pointer)
        let given = Int(raw.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
        guard given >= Self.version1Bytes else {
            throw invalidArgument("keybay_open_options.struct_size is \(given), less than the \(Self.version1Bytes) bytes of version 1")
        }
        var options = keybay_open_options()
        withUnsafeMutableBytes(of: &options) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: min(given, target.count)))
        }
        guard let app = options.app_id else { throw invalidArgument("keybay_open_options.app_id is NULL") }
        var configuration = try KeybayConfiguration(applicationID: try Self.text(app, "app_id"))
        if let root = options.root {
            // A root named by the caller is insisted on, as the CLI's --root is.
            configuration.rootPlugin = try Self.text(root, "root")
            configuration.requireRootPlugin = true
        }
        if var dirs = options.plugin_dirs {
            while let dir = dirs.pointee {
                configuration.pluginSearch.directories.append(try Self.text(dir, "plugin_dirs"))
                dirs += 1
            }
        }
        self.configuration = configuration
        methodID = try options.method_id.map { try Self.text($0, "method_id") }
        noInput = options.no_input != 0
        // Past the caller's struct_size the copy left `tries` zero: one ask.
        tries = Int(options.tries)
        guard (0...KeybayOpenPolicy.maximumTries).contains(tries) else {
            throw invalidArgument("keybay_open_options.tries is \(tries), not 0 to \(KeybayOpenPolicy.maximumTries)")
        }
    }

    /// The library's open policy for these options.
    var policy: KeybayOpenPolicy { KeybayOpenPolicy(method: methodID, tries: max(tries, 1)) }

    /// The size of version 1's struct, through `no_input`: what every caller passes at least.
    static let version1Bytes = MemoryLayout<keybay_open_options>.offset(of: \.no_input)! + MemoryLayout<Int32>.size

    /// A C string as text; `.invalidArgument` when it is not UTF-8.
    static func text(_ c: UnsafePointer<CChar>, _ what: String) throws -> String {
        guard let s = String(validatingCString: c) else { throw invalidArgument("\(what) is not UTF-8 text") }
        return s
    }
}
