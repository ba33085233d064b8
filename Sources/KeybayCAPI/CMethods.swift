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
        let prepared = try session.auth.prepare(plugin: plugin, options: pairs, label: label, interaction: asker?.asker ?? NonInteractive())
        // A secret shown once opens only the new store: without a host to show it, store nothing;
        // one that cannot reach the host whole (a NUL in it) is refused before anything is stored.
        if let shown = prepared.shownSecret {
            guard asker?.canShowSecret == true else {
                prepared.discard()
                throw KeybayError(.interactionRequired, "\(plugin) shows a secret once, but the host gave no show_secret; nothing was enrolled")
            }
            guard !shown.text.withUnsafeBytes({ $0.contains(0) }) else {
                prepared.discard()
                throw KeybayError(.pluginFailed, "\(plugin) showed a secret with a NUL byte, which show_secret cannot pass on; nothing was enrolled")
            }
        }
        // The library's one order: commit, then show, then take back if showing failed. The id
        // goes out with an unconfirmed commit too: the method is in the store.
        do {
            try prepared.commit(showingSecretWith: { shown in try asker?.showSecret(shown) })
        } catch let e as KeybayError where e.tookEffect {
            methodID?.pointee = strdup(prepared.method.id)
            throw CAPIFailure(error: CError(e, methodID: prepared.method.id))
        }
        methodID?.pointee = strdup(prepared.method.id)
    }
}

@_cdecl("keybay_remove_method")
public func keybay_remove_method(_ store: OpaquePointer?, _ methodID: UnsafePointer<CChar>?, _ host: UnsafePointer<keybay_interaction>?,
                                 _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    reporting(err) {
        let session = try CStore.from(store).session
        // Checked like every interaction; removal runs no method, and the root asks through the
        // interaction the store was opened with (keybay.h).
        _ = try CInteraction.from(host)
        try session.auth.remove(try text(methodID, "method_id"))
    }
}

@_cdecl("keybay_verify")
public func keybay_verify(_ store: OpaquePointer?, _ methodID: UnsafePointer<CChar>?, _ host: UnsafePointer<keybay_interaction>?,
                          _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    reporting(err) {
        let session = try CStore.from(store).session
        let id = try text(methodID, "method_id")
        if let asker = try CInteraction.from(host) {
            try session.auth.verify(id, interaction: asker.asker)
        } else {
            try session.auth.verify(id)
        }
    }
}
