// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Keybay

/// A caller's `keybay_open_options`, checked and read into a configuration.
struct OpenOptions {
    let configuration: KeybayConfiguration
    let methodID: String?
    let noInput: Bool

    init(_ pointer: UnsafePointer<keybay_open_options>?) throws {
        guard let pointer else { throw invalidArgument("keybay_open_options is NULL") }
        let given = Int(pointer.pointee.struct_size)
        guard given >= MemoryLayout<keybay_open_options>.size else {
            throw invalidArgument("keybay_open_options.struct_size is \(given), expected at least \(MemoryLayout<keybay_open_options>.size)")
        }
        let options = pointer.pointee
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
    }

    /// A C string as text; `.invalidArgument` when it is not UTF-8.
    static func text(_ c: UnsafePointer<CChar>, _ what: String) throws -> String {
        guard let s = String(validatingCString: c) else { throw invalidArgument("\(what) is not UTF-8 text") }
        return s
    }
}
