// SPDX-License-Identifier: Apache-2.0
// A host that keeps a recovery key: it enrolls one in two phases (nothing is stored until
// commit; the key is shown only once the store needs it, and taken back if it could not be),
// and reads what a failure is about from KeybayError's fields rather than its message.
//
//   KEYBAY_PLUGIN_PATH=/path/to/keybay/.build/debug .build/debug/keybay-example-recovery
import Glibc
import Keybay

/// Answers a recovery-key question with the key it holds.
struct RecoveryKeyAnswer: KeybayInteraction {
    let key: [UInt8]

    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard request.kind == .recoveryKey, key.count <= buffer.count else { throw KeybayError(.cancelled, "no answer for that") }
        buffer.copyBytes(from: key)
        return key.count
    }
}

/// Writes the key from guarded memory; false if standard output did not take all of it.
func show(_ secret: KeybayShownSecret) -> Bool {
    fflush(nil) // what print() buffered comes first
    let written = secret.text.withUnsafeBytes { write(1, $0.baseAddress, $0.count) == $0.count }
    return written && write(1, "\n", 1) == 1
}

@main
struct RecoveryHost {
    static func main() {
        do {
            let configuration = try KeybayConfiguration(applicationID: "com.example.recoveryhost")
            let session = try KeybayStore.open(configuration)
            try session.set("api/token", string: "example-token-123")

            // 1. Prepare (the ceremony; nothing stored), commit, then show the key.
            let prepared = try session.auth.prepare(plugin: "recovery")
            try prepared.commit()
            guard let key = prepared.shownSecret else { throw KeybayError(.pluginFailed, "the recovery plugin showed no key") }
            print("stored method \(prepared.method.id); its recovery key:")
            guard show(key) else {
                try prepared.takeBack()
                throw KeybayError(.io, "the recovery key could not be shown, so it was taken back")
            }

            // 2. Another store's valid key is a wrong secret for this one: the error names the method.
            let other = try KeybayConfiguration(applicationID: "com.example.recoveryhost.other")
            let otherPrepared = try KeybayStore.prepare(other, enrolling: "recovery")
            try otherPrepared.commit()
            let otherKey = otherPrepared.shownSecret!.text.withUnsafeBytes { Array($0) }
            do {
                _ = try KeybayStore.open(configuration, method: prepared.method.id, interaction: RecoveryKeyAnswer(key: otherKey))
                print("wrong key: it opened the store")
            } catch let e as KeybayError {
                print("wrong key: \(e.code.rawValue) for method \(e.methodID ?? "?")")
            }

            // 3. A store that is not there: the error names its path.
            let missing = try KeybayConfiguration(applicationID: "com.example.recoveryhost.missing")
            do {
                _ = try KeybayStore.open(missing, createIfAbsent: false)
                print("missing: it opened")
            } catch let e as KeybayError {
                print("missing: \(e.code.rawValue) at \(e.path ?? "?")")
            }
        } catch let error as KeybayError {
            print("keybay: \(error)")
            exit(1)
        } catch {
            print("error: \(error)")
            exit(1)
        }
    }
}
