// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import CSodium
import Glibc

/// Whose store a plugin call serves: the application (`keybay_host.application_id`, and prompts
/// that say whose secret they ask for), the method's label, the enrolled method it unlocks (nil
/// when one is being enrolled); the files open_file may open (an unlock's grants) and the Keybay
/// paths of the store's configuration, which the host never hands a plugin. Empty outside a store.
struct MethodCallContext: Sendable {
    var applicationID: String?
    var label: String?
    var methodID: String?
    var files: FileAccess = .none
    /// The configuration's Keybay paths; the environment's defaults are added when a service needs them.
    var keybay: KeybayPaths?

    static var none: MethodCallContext { MethodCallContext() }

    init() {}

    /// A call outside a store that unlocks with `grants` (plugin-check, benchmark).
    static func unlocking(_ grants: [FileGrant]) -> MethodCallContext {
        var context = MethodCallContext()
        context.files = .unlocking(grants)
        return context
    }
}

/// Presents a `KeybayInteraction` to C plugins as a `keybay_host`. One bridge serves one call;
/// it also collects the plugin's one-line error explanation.
final class HostBridge {
    let interaction: any KeybayInteraction
    /// The plugin called: every secret request names it, so a host never answers it with a
    /// secret given for another.
    let pluginID: String
    let about: MethodCallContext
    var errorText: String?
    /// The plugin's set_error_detail for its last line (a reason token, checked when the error is
    /// built; tries left; a path), and one given since that line, which belongs to the next.
    var errorDetail: ErrorDetail?
    var pendingDetail: ErrorDetail?
    var failure: KeybayError?
    /// What open_file and connect_socket may hand the plugin in this call.
    let access: HostAccess
    /// `about.applicationID` as the C string the host struct points at, for the call's duration.
    private let applicationID: UnsafeMutablePointer<CChar>?

    init(_ interaction: any KeybayInteraction, pluginID: String, about: MethodCallContext = .none, access: HostAccess) {
        self.interaction = interaction
        self.pluginID = pluginID
        self.about = about
        self.access = access
        applicationID = about.applicationID.flatMap { strdup($0) }
    }

    deinit { free(applicationID) }

    /// Runs `body` with a `keybay_host` whose context points at this bridge.
    func withHost<R>(_ body: (UnsafePointer<keybay_host>) throws -> R) rethrows -> R {
        var host = keybay_host()
        host.abi_version = KEYBAY_PLUGIN_ABI_VERSION
        host.struct_size = UInt32(MemoryLayout<keybay_host>.size)
        host.context = Unmanaged.passUnretained(self).toOpaque()
        host.ask_secret = bridgeAskSecret
        host.message = bridgeMessage
        host.confirm = bridgeConfirm
        host.is_cancelled = bridgeIsCancelled
        host.log = bridgeLog
        host.set_error = bridgeSetError
        host.application_id = UnsafePointer(applicationID)
        host.show_secret = bridgeShowSecret
        host.set_error_detail = bridgeSetErrorDetail
        host.open_file = bridgeOpenFile
        host.connect_socket = bridgeConnectSocket
        host.set_error_pcrs = bridgeSetErrorPCRs
        return try withExtendedLifetime(self) { try withUnsafePointer(to: &host) { try body($0) } }
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> HostBridge {
        Unmanaged<HostBridge>.fromOpaque(context!).takeUnretainedValue()
    }

    /// Maps a failure thrown by the interaction to the ABI status, remembering the error.
    func status(for error: Error) -> keybay_status {
        let e = error as? KeybayError ?? KeybayError(.cancelled, "\(error)")
        failure = e
        // Only a detail the plugin gives after this refusal is about it (why it had to ask).
        errorDetail = nil
        pendingDetail = nil
        switch e.code {
        case .interactionRequired: return KEYBAY_ERR_INTERACTION_UNAVAILABLE
        default: return KEYBAY_ERR_CANCELLED
        }
    }
}

/// open_file and connect_socket: the descriptor `body` gives, or its refusal, which becomes the
/// call's error line and detail (a plugin that passes the status on reports the host's cause).
private func bridgeDescriptor(_ context: UnsafeMutableRawPointer?, _ name: UnsafePointer<CChar>?, _ fdOut: UnsafeMutablePointer<Int32>?,
                              _ body: (HostAccess, String) throws(HostAccess.Refusal) -> Int32) -> keybay_status {
    let bridge = HostBridge.from(context)
    guard let name, let fdOut else { return KEYBAY_ERR_INTERNAL }
    fdOut.pointee = -1
    do throws(HostAccess.Refusal) {
        fdOut.pointee = try body(bridge.access, String(cString: name))
        return KEYBAY_OK
    } catch {
        bridge.errorText = error.error.message
        bridge.errorDetail = ErrorDetail(reason: error.error.reason, triesLeft: nil, path: error.error.path)
        bridge.pendingDetail = nil
        return error.status
    }
}

private func bridgeOpenFile(_ context: UnsafeMutableRawPointer?, _ option: UnsafePointer<CChar>?, _ fdOut: UnsafeMutablePointer<Int32>?) -> keybay_status {
    bridgeDescriptor(context, option, fdOut) { access, option throws(HostAccess.Refusal) in try access.openFile(option) }
}

private func bridgeConnectSocket(_ context: UnsafeMutableRawPointer?, _ path: UnsafePointer<CChar>?, _ fdOut: UnsafeMutablePointer<Int32>?) -> keybay_status {
    bridgeDescriptor(context, path, fdOut) { access, path throws(HostAccess.Refusal) in try access.connectSocket(path) }
}

private func bridgeAskSecret(_ context: UnsafeMutableRawPointer?, _ kind: keybay_secret_kind, _ flags: UInt32,
                             _ prompt: UnsafePointer<CChar>?, _ retries: Int32, _ out: UnsafeMutablePointer<UInt8>?,
                             _ capacity: Int, _ outLength: UnsafeMutablePointer<Int>?) -> keybay_status {
    let bridge = HostBridge.from(context)
    guard let out, let outLength, capacity > 0 else { return KEYBAY_ERR_INTERNAL }
    let isNew = flags & KEYBAY_ASK_NEW != 0
    guard let kind = secretKind(kind) else {
        bridge.errorText = "unknown secret kind \(kind.rawValue)"
        return KEYBAY_ERR_UNSUPPORTED
    }
    let request = { (confirmation: Bool) in
        KeybaySecretRequest(kind: kind, prompt: prompt.map { String(cString: $0) } ?? "", retriesLeft: retries >= 0 ? Int(retries) : nil,
                            isNew: isNew, isConfirmation: confirmation, application: bridge.about.applicationID, label: bridge.about.label,
                            pluginID: bridge.pluginID, isRetry: false, methodID: bridge.about.methodID)
    }
    do {
        let buffer = UnsafeMutableRawBufferPointer(start: out, count: capacity)
        let n = try bridge.interaction.askSecret(request(false), into: buffer)
        guard n >= 0, n <= capacity else { return KEYBAY_ERR_INTERNAL }
        if isNew {
            // A new secret is asked twice; the entries must match byte for byte.
            guard let second = sodium_malloc(capacity) else { return KEYBAY_ERR_INTERNAL }
            defer { sodium_free(second) }
            let m = try bridge.interaction.askSecret(request(true), into: UnsafeMutableRawBufferPointer(start: second, count: capacity))
            guard m == n, sodium_memcmp(out, second, n) == 0 else {
                sodium_memzero(out, capacity)
                bridge.errorText = "the two entries did not match"
                return KEYBAY_ERR_WRONG_SECRET
            }
        }
        outLength.pointee = n
        return KEYBAY_OK
    } catch {
        sodium_memzero(out, capacity)
        return bridge.status(for: error)
    }
}

private func secretKind(_ kind: keybay_secret_kind) -> KeybaySecretRequest.Kind? {
    switch kind {
    case KEYBAY_SECRET_PASSPHRASE: .passphrase
    case KEYBAY_SECRET_PIN: .pin
    case KEYBAY_SECRET_RECOVERY_KEY: .recoveryKey
    default: nil
    }
}

private func bridgeShowSecret(_ context: UnsafeMutableRawPointer?, _ kind: keybay_secret_kind, _ text: UnsafePointer<CChar>?,
                              _ picture: UnsafePointer<CChar>?) -> keybay_status {
    let bridge = HostBridge.from(context)
    guard let kind = secretKind(kind), let text, strlen(text) > 0 else {
        bridge.errorText = "show_secret needs a known kind and a text"
        return KEYBAY_ERR_INTERNAL
    }
    // Copied from the plugin's C strings straight into guarded memory: no String holds them.
    func guarded(_ p: UnsafePointer<CChar>) -> SecureBytes {
        SecureBytes(copying: UnsafeRawBufferPointer(start: p, count: strlen(p)))
    }
    do {
        try bridge.interaction.showSecret(KeybayShownSecret(kind: kind, text: guarded(text),
                                                            picture: picture.flatMap { strlen($0) > 0 ? guarded($0) : nil }))
        return KEYBAY_OK
    } catch {
        return bridge.status(for: error)
    }
}

private func bridgeMessage(_ context: UnsafeMutableRawPointer?, _ level: keybay_message_level, _ text: UnsafePointer<CChar>?) -> keybay_status {
    let bridge = HostBridge.from(context)
    let mapped: KeybayMessageLevel = level == KEYBAY_MESSAGE_PROGRESS ? .progress : level == KEYBAY_MESSAGE_WARNING ? .warning : .info
    bridge.interaction.message(text.map { String(cString: $0) } ?? "", level: mapped)
    return KEYBAY_OK
}

private func bridgeConfirm(_ context: UnsafeMutableRawPointer?, _ question: UnsafePointer<CChar>?, _ answer: UnsafeMutablePointer<Int32>?) -> keybay_status {
    let bridge = HostBridge.from(context)
    do {
        let yes = try bridge.interaction.confirm(question.map { String(cString: $0) } ?? "")
        answer?.pointee = yes ? 1 : 0
        return KEYBAY_OK
    } catch {
        return bridge.status(for: error)
    }
}

private func bridgeIsCancelled(_ context: UnsafeMutableRawPointer?) -> Int32 {
    HostBridge.from(context).interaction.isCancelled ? 1 : 0
}

private func bridgeLog(_ context: UnsafeMutableRawPointer?, _ level: keybay_log_level, _ text: UnsafePointer<CChar>?) {
    let interaction = HostBridge.from(context).interaction
    // An unknown level counts as an error: a line is never lost for being mislabelled.
    let mapped = KeybayLogLevel(rawValue: Int(level.rawValue)) ?? .error
    guard mapped >= interaction.logLevel else { return }
    interaction.log(text.map { String(cString: $0) } ?? "", level: mapped)
}

private func bridgeSetError(_ context: UnsafeMutableRawPointer?, _ text: UnsafePointer<CChar>?) {
    let bridge = HostBridge.from(context)
    bridge.errorText = text.map { String(cString: $0) }
    // A detail is given just before its line: a line without one drops an earlier line's.
    bridge.errorDetail = bridge.pendingDetail
    bridge.pendingDetail = nil
    (bridge.interaction as? ErrorLineObserver)?.pluginSetError(bridge.errorText ?? "")
}

private func bridgeSetErrorDetail(_ context: UnsafeMutableRawPointer?, _ reason: UnsafePointer<CChar>?, _ triesLeft: Int32,
                                  _ path: UnsafePointer<CChar>?) {
    let bridge = HostBridge.from(context)
    // At most 41 bytes are read: a longer token is dropped anyway (KeybayError.isReasonToken).
    // Only an absolute path shorter than PATH_MAX is kept.
    bridge.pendingDetail = ErrorDetail(reason: reason.flatMap { strnlen($0, 41) <= 40 ? String(cString: $0) : nil },
                                       triesLeft: triesLeft >= 0 ? Int(triesLeft) : nil,
                                       path: path.flatMap { $0.pointee == 0x2F && strnlen($0, Int(PATH_MAX)) < Int(PATH_MAX) ? String(cString: $0) : nil })
}

/// set_error_pcrs: kept with the detail given before it, for the same line.
private func bridgeSetErrorPCRs(_ context: UnsafeMutableRawPointer?, _ pcrs: UInt32) {
    let bridge = HostBridge.from(context)
    var detail = bridge.pendingDetail ?? ErrorDetail()
    detail.pcrs = ErrorDetail.pcrList(pcrs)
    bridge.pendingDetail = detail
}

/// What set_error_detail (and set_error_pcrs) said about one error line.
struct ErrorDetail {
    var reason: String?
    var triesLeft: Int?
    var path: String?
    var pcrs: [Int]?

    /// PCRs 0–23 of a bit mask, ascending (higher bits dropped).
    static func pcrList(_ mask: UInt32) -> [Int] { (0..<24).filter { mask >> UInt32($0) & 1 != 0 } }
}

extension KeybayError {
    /// This error with what a plugin's set_error_detail said (checked by `with`).
    func with(detail: ErrorDetail?) -> KeybayError {
        with(path: detail?.path, reason: detail?.reason, triesLeft: detail?.triesLeft, pcrs: detail?.pcrs)
    }
}

/// An interaction that wants to see the plugin's set_error lines too (the conformance run checks
/// that errors a plugin originates come with one).
package protocol ErrorLineObserver {
    func pluginSetError(_ line: String)
}
