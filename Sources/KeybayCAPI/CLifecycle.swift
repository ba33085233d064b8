// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Glibc
import Keybay

@_cdecl("keybay_reset")
public func keybay_reset(_ options: UnsafePointer<keybay_open_options>?, _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    reporting(err) {
        try KeybayStore.reset(try OpenOptions(options).configuration)
    }
}

@_cdecl("keybay_status_json")
public func keybay_status_json(_ options: UnsafePointer<keybay_open_options>?, _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                               _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    json?.pointee = nil
    return reporting(err) {
        let configuration = try OpenOptions(options).configuration
        guard let json else { throw invalidArgument("keybay_status_json needs json") }
        json.pointee = strdup(try KeybayStore.status(configuration).json)
    }
}

nonisolated(unsafe) private let version = strdup(KeybayVersion.release)!

@_cdecl("keybay_version")
public func keybay_version() -> UnsafePointer<CChar> { UnsafePointer(version) }
