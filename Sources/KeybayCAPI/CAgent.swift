// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Glibc
import Keybay

@_cdecl("keybay_unlock")
public func keybay_unlock(_ store: OpaquePointer?, _ seconds: UInt32, _ until: UnsafeMutablePointer<Int64>?,
                          _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    until?.pointee = 0
    return reporting(err) {
        let session = try CStore.from(store).session
        guard let socket = session.configuration.agentSocket else {
            throw KeybayError(.invalidArgument, "XDG_RUNTIME_DIR is not set to an absolute path: there is no place for the keybay agent's socket")
        }
        guard !session.readsThroughAgent else {
            throw KeybayError(.invalidArgument, "the store was opened through the keybay agent, which holds it already: lock it, open it again and unlock that handle")
        }
        try KeybayAgent.ensureRunning(socket, program: try KeybayAgent.installedProgram())
        let forgets = try KeybayStore.unlock(session, agentSocket: socket, for: UInt64(seconds))
        until?.pointee = forgets
    }
}

@_cdecl("keybay_lock")
public func keybay_lock(_ options: UnsafePointer<keybay_open_options>?, _ forgotten: UnsafeMutablePointer<Int32>?,
                        _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    forgotten?.pointee = 0
    return reporting(err) {
        let configuration = try OpenOptions(options).configuration
        forgotten?.pointee = (KeybayStore.lock(configuration) ?? 0) > 0 ? 1 : 0
    }
}
