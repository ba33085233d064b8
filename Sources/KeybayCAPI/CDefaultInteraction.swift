// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Glibc
import Keybay
import KeybayPrompt

/// The struct `keybay_default_interaction` hands out: made once, never freed. Its context points
/// at itself, which is how the library knows it (a copy too) and uses `KeybayDefaultInteraction`
/// directly, with each question's whole request (kind, application, label), instead of the
/// callbacks, which see only a prompt.
nonisolated(unsafe) let defaultInteraction: UnsafeMutablePointer<keybay_interaction> = {
    let shared = UnsafeMutablePointer<keybay_interaction>.allocate(capacity: 1)
    shared.initialize(to: keybay_interaction())
    shared.pointee.abi_version = KEYBAY_INTERACTION_ABI_VERSION
    shared.pointee.struct_size = UInt32(MemoryLayout<keybay_interaction>.size)
    shared.pointee.context = UnsafeMutableRawPointer(shared)
    shared.pointee.ask_secret = { _, prompt, isConfirmation, buf, capacity, length in
        guard let buf, let length else { return KEYBAY_ERR_INVALID_ARGUMENT.number }
        let request = KeybaySecretRequest(kind: .passphrase, prompt: prompt.map { String(cString: $0) } ?? "", isConfirmation: isConfirmation != 0)
        do {
            length.pointee = try KeybayDefaultInteraction().askSecret(request, into: UnsafeMutableRawBufferPointer(start: buf, count: capacity))
            return 0
        } catch let e as KeybayError where e.code == .cancelled {
            return KEYBAY_ERR_CANCELLED.number
        } catch {
            return KEYBAY_ERR_INTERACTION_REQUIRED.number
        }
    }
    shared.pointee.confirm = { _, text in
        (try? KeybayDefaultInteraction().confirm(text.map { String(cString: $0) } ?? "")) == true ? 1 : 0
    }
    shared.pointee.message = { _, level, text in
        KeybayDefaultInteraction().message(text.map { String(cString: $0) } ?? "", level: level == KEYBAY_MESSAGE_WARNING ? .warning : .info)
    }
    return shared
}()

@_cdecl("keybay_default_interaction")
public func keybay_default_interaction() -> UnsafePointer<keybay_interaction>? {
    KeybayDefaultInteraction.canAsk ? UnsafePointer(defaultInteraction) : nil
}
