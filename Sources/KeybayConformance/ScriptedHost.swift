// SPDX-License-Identifier: Apache-2.0
import Keybay
import Synchronization

/// Answers every secret request with the same bytes (a recovery key with `recoveryKey`, the
/// text an enrollment showed, when given; a PIN with `pin`, the device's real one, when given) and records what was asked and shown, and every
/// set_error line the plugin gave.
final class ScriptedHost: KeybayInteraction, ErrorLineObserver, @unchecked Sendable {
    let secret: [UInt8]
    let recoveryKey: [UInt8]?
    let refuse: Bool
    /// The PIN a device fixes (`plugin-check --pin-fd N`): the answer to a PIN request.
    let pin: SecureBytes?
    let asks = Mutex(0)
    /// The text of the secret the plugin showed (a recovery key), if it showed one.
    let shown = Mutex<[UInt8]?>(nil)
    let errorLines = Mutex<[String]>([])

    init(secret: String, pin: SecureBytes? = nil, recoveryKey: [UInt8]? = nil, refuse: Bool = false) {
        self.secret = Array(secret.utf8)
        self.pin = pin
        self.recoveryKey = recoveryKey
        self.refuse = refuse
    }

    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        asks.withLock { $0 += 1 }
        if refuse { throw KeybayError(.interactionRequired, "plugin-check: no interaction") }
        if request.kind == .pin, !request.isNew, let pin {
            guard pin.count <= buffer.count else { throw KeybayError(.invalidArgument, "plugin-check: the plugin's buffer is too small for the PIN") }
            pin.withUnsafeBytes { buffer.copyMemory(from: $0) }
            return pin.count
        }
        let answer = request.kind == .recoveryKey ? recoveryKey ?? secret : secret
        guard answer.count <= buffer.count else { throw KeybayError(.invalidArgument, "plugin-check: the plugin's buffer is too small") }
        buffer.copyBytes(from: answer)
        return answer.count
    }

    func showSecret(_ secret: KeybayShownSecret) throws {
        if refuse { throw KeybayError(.interactionRequired, "plugin-check: no interaction") }
        let text = secret.text.withUnsafeBytes { Array($0) }
        shown.withLock { $0 = text }
    }

    func confirm(_ question: String) throws -> Bool {
        if refuse { throw KeybayError(.interactionRequired, "plugin-check: no interaction") }
        return true
    }

    package func pluginSetError(_ line: String) { errorLines.withLock { $0.append(line) } }
    var asked: Int { asks.withLock { $0 } }
    var gaveErrorLine: Bool { errorLines.withLock { !$0.isEmpty } }
    var shownSecret: [UInt8]? { shown.withLock { $0 } }
}
