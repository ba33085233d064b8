// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Glibc
import Keybay

@_cdecl("keybay_enroll")
public func keybay_enroll(_ store: OpaquePointer?, _ plugin: UnsafePointer<CChar>?, _ label: UnsafePointer<CChar>?,
                          _ options: UnsafePointer<UnsafePointer<CChar>?>?, _ host: UnsafePointer<keybay_interaction>?,
                          _ methodID: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    methodID?.pointee = nil
    return reporting(err) {
        let session = try CStore.from(store).session
        let plugin = try text(plugin, "plugin")
        let label = try label.map { try OpenOptions.text($0, "label") }
        var pairs: [(String, String)] = []
        if var option = options {
            while let item = option.pointee {
                let pair = try OpenOptions.text(item, "option")
                guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
                    throw invalidArgument("option '\(pair)' is not name=value")
                }
                pairs.append((String(pair[..<eq]), String(pair[pair.index(after: eq)...])))
                option += 1
            }
        }
        let asker = try CInteraction.from(host)
        let prepared = try session.auth.prepare(plugin: plugin, options: pairs, label: label, interaction: asker ?? NonInteractive())
        // A secret shown once opens only the new store: without a host to show it, store nothing.
        if prepared.shownSecret != nil && asker?.canShowSecret != true {
            prepared.discard()
            throw KeybayError(.interactionRequired, "\(plugin) shows a secret once, but the host gave no show_secret; nothing was enrolled")
        }
        var unconfirmed: Error?
        do {
            try prepared.commit()
        } catch let e as KeybayError where e.tookEffect {
            unconfirmed = e // stored all the same: hand the secret over, then report it
        }
        if let shown = prepared.shownSecret, let asker { try asker.showSecret(shown) }
        if let unconfirmed { throw unconfirmed }
        methodID?.pointee = strdup(prepared.method.id)
    }
}

@_cdecl("keybay_remove_method")
public func keybay_remove_method(_ store: OpaquePointer?, _ methodID: UnsafePointer<CChar>?, _ host: UnsafePointer<keybay_interaction>?,
                                 _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    reporting(err) {
        let session = try CStore.from(store).session
        _ = try CInteraction.from(host) // checked like every interaction; removal asks no method
        try session.auth.remove(try text(methodID, "method_id"))
    }
}
