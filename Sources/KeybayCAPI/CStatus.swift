// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Glibc
import Keybay

@_cdecl("keybay_status_get")
public func keybay_status_get(_ options: UnsafePointer<keybay_open_options>?, _ status: UnsafeMutablePointer<UnsafeMutablePointer<keybay_status_info>?>?,
                              _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    status?.pointee = nil
    return reporting(err) {
        let configuration = try OpenOptions(options).configuration
        guard let status else { throw invalidArgument("keybay_status_get needs status") }
        let s = try KeybayStore.status(configuration)
        // Each method's needs_device from its plugin's descriptor (loaded, not run).
        let methods = s.methods.map { $0.describingDevice(search: configuration.pluginSearch) }
        let info = UnsafeMutablePointer<keybay_status_info>.allocate(capacity: 1)
        var out = keybay_status_info()
        out.struct_size = UInt32(MemoryLayout<keybay_status_info>.size)
        out.state = UnsafePointer(strdup(s.state.rawValue))
        out.store_path = UnsafePointer(strdup(s.storePath))
        out.root = UnsafePointer(strdup(s.rootPlugin))
        out.root_location = UnsafePointer(strdup(s.rootLocation))
        let list = UnsafeMutablePointer<keybay_method_info>.allocate(capacity: max(methods.count, 1))
        for (i, m) in methods.enumerated() { (list + i).initialize(to: methodInfo(m)) }
        out.methods = UnsafePointer(list)
        out.method_count = methods.count
        out.unlocked = s.unlocked == nil ? 0 : 1
        out.unlocked_until = s.unlocked?.until ?? 0
        info.initialize(to: out)
        status.pointee = info
    }
}

@_cdecl("keybay_free_status")
public func keybay_free_status(_ status: UnsafeMutablePointer<keybay_status_info>?) {
    guard let status else { return }
    let s = status.pointee
    for p in [s.state, s.store_path, s.root, s.root_location] { free(UnsafeMutablePointer(mutating: p)) }
    if let methods = s.methods {
        for i in 0..<s.method_count { freeMethodInfo(methods[i]) }
        UnsafeMutablePointer(mutating: methods).deallocate()
    }
    status.deallocate()
}
