// SPDX-License-Identifier: Apache-2.0
import CKeybay
import CSodium
import Glibc
import Keybay
import KeybayPrompt

/// A host's `keybay_interaction` as a `KeybayInteraction`: each question goes to its callback on
/// the calling thread. Only the fields the caller's `struct_size` covers are read (the rest stay
/// NULL, "not offered").
final class CInteraction: KeybayInteraction, @unchecked Sendable {
    // @unchecked: the struct is a copy made once; the host's context is the host's to guard
    // (keybay.h: callbacks run on the thread of the call that needs them).
    private let callbacks: keybay_interaction

    /// nil for NULL; `.invalidArgument` for a wrong abi_version or a struct_size that does not
    /// reach `ask_secret`.
    static func from(_ pointer: UnsafePointer<keybay_interaction>?) throws -> CInteraction? {
        guard let pointer else { return nil }
        // The two leading fields are read as bytes: the caller's struct may be shorter than ours.
        let raw = UnsafeRawPointer(pointer)
        let version = raw.loadUnaligned(fromByteOffset: 0, as: UInt32.self)
        let given = Int(raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        guard version == KEYBAY_INTERACTION_ABI_VERSION else {
            throw invalidArgument("keybay_interaction.abi_version is \(version), expected \(KEYBAY_INTERACTION_ABI_VERSION)")
        }
        let needed = MemoryLayout<keybay_interaction>.offset(of: \.ask_secret)! + MemoryLayout<UnsafeRawPointer>.size
        guard given >= needed else { throw invalidArgument("keybay_interaction.struct_size is \(given), less than the \(needed) bytes through ask_secret") }
        var copy = keybay_interaction()
        withUnsafeMutableBytes(of: &copy) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: min(given, target.count)))
        }
        return CInteraction(copy)
    }

    private init(_ callbacks: keybay_interaction) { self.callbacks = callbacks }

    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var length = 0
        let status: Int32
        if let ask = callbacks.ask {
            status = CAskRequest.with(request) { asked in
                buffer.withMemoryRebound(to: CChar.self) { chars in ask(callbacks.context, asked, chars.baseAddress, chars.count, &length) }
            }
        } else if let ask = callbacks.ask_secret {
            status = buffer.withMemoryRebound(to: CChar.self) { chars in
                ask(callbacks.context, request.prompt, request.isConfirmation ? 1 : 0, chars.baseAddress, chars.count, &length)
            }
        } else {
            throw KeybayError(.interactionRequired, "a \(request.kind.displayName) is needed but the host gave neither ask nor ask_secret")
        }
        switch status {
        case 0:
            guard length <= buffer.count else {
                throw invalidArgument("ask_secret answered \(length) bytes into a buffer of \(buffer.count)")
            }
            return length
        case KEYBAY_ERR_CANCELLED.number:
            throw KeybayError(.cancelled, "the host cancelled the request for a \(request.kind.displayName)")
        default:
            throw KeybayError(.interactionRequired, "the host could not ask for a \(request.kind.displayName)")
        }
    }

    func confirm(_ question: String) throws -> Bool {
        guard let confirm = callbacks.confirm else {
            throw KeybayError(.interactionRequired, "a confirmation is needed but the host gave no confirm: \(question)")
        }
        return confirm(callbacks.context, question) == 1
    }

    func message(_ text: String, level: KeybayMessageLevel) {
        callbacks.message?(callbacks.context, level == .warning ? KEYBAY_MESSAGE_WARNING : KEYBAY_MESSAGE_INFO, text)
    }

    /// The host's `choose_method`, given the methods as `keybay_method_info`; without one, the
    /// protocol's default (`.authenticationRequired` listing them).
    func chooseMethod(_ methods: [KeybayMethod]) throws -> String {
        guard let choose = callbacks.choose_method else { throw KeybayError.methodChoiceRequired(methods) }
        let list = CMethodList(methods)
        var chosen = Int.max
        switch choose(callbacks.context, list.entries, list.count, &chosen) {
        case 0:
            guard chosen < methods.count else { throw invalidArgument("choose_method chose entry \(chosen) of \(methods.count)") }
            return methods[chosen].id
        case KEYBAY_ERR_CANCELLED.number:
            throw KeybayError(.cancelled, "the host cancelled the choice of an unlock method")
        default:
            throw KeybayError(.interactionRequired, "the host could not choose an unlock method")
        }
    }

    /// Whether the host can be shown a secret (a recovery key).
    var canShowSecret: Bool { callbacks.show_secret != nil }

    /// The secret goes to the host as a NUL-terminated copy in guarded memory, wiped after.
    func showSecret(_ secret: KeybayShownSecret) throws {
        guard let show = callbacks.show_secret else {
            throw KeybayError(.interactionRequired, "a \(secret.kind.displayName) must be shown but the host gave no show_secret")
        }
        try secret.text.withUnsafeBytes { text in
            guard let copy = sodium_malloc(text.count + 1) else { throw KeybayError(.io, "cannot allocate guarded memory") }
            defer { sodium_free(copy) }
            if let bytes = text.baseAddress { copy.copyMemory(from: bytes, byteCount: text.count) }
            copy.storeBytes(of: 0, toByteOffset: text.count, as: UInt8.self)
            show(callbacks.context, secret.kind.displayName, copy.assumingMemoryBound(to: CChar.self))
        }
    }

    /// Whether this is `keybay_default_interaction()`'s struct (or a copy of it).
    var isDefault: Bool { callbacks.context == UnsafeMutableRawPointer(defaultInteraction) }

    /// Who asks: the library's default interaction for its struct, else these callbacks.
    var asker: any KeybayInteraction { isDefault ? KeybayDefaultInteraction() : self }

    var isCancelled: Bool { callbacks.is_cancelled.map { $0(callbacks.context) != 0 } ?? false }
}
