// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Glibc
import Keybay

/// The TPM root's recovery: `keybay_root_reseal` (keybay.h), `KeybayStore.resealRoot`.
@_cdecl("keybay_root_reseal")
public func keybay_root_reseal(_ options: UnsafePointer<keybay_open_options>?, _ recoveryKey: UnsafePointer<UInt8>?, _ length: Int,
                               _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    reporting(err) {
        let configuration = try OpenOptions(options).configuration
        guard let recoveryKey, length > 0 else { throw invalidArgument("keybay_root_reseal needs the recovery key") }
        // Copied straight into guarded memory; the caller wipes its own copy.
        let key = SecureBytes(copying: UnsafeRawBufferPointer(start: recoveryKey, count: length))
        try KeybayStore.resealRoot(configuration, recoveryKey: key)
    }
}
