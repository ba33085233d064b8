// SPDX-License-Identifier: Apache-2.0
/// age (age-encryption.org/v1) keys as text, for exports: recipients `age1…` and identity
/// files as `age-keygen` writes them. Only the X25519 type is understood.
public enum KeybayAge {
    /// The most bytes an export file, an identity file or a recipients file is read to.
    public static let maxFileBytes = 64 * 1024 * 1024

    /// Checks a recipient; returns it unchanged.
    ///
    /// - Parameter recipient: An `age1…` X25519 recipient.
    /// - Returns: `recipient`.
    /// - Throws: `.invalidArgument` for anything else (a plugin or post-quantum recipient, an SSH key).
    @discardableResult
    public static func validRecipient(_ recipient: String) throws -> String {
        _ = try AgeX25519.parseRecipient(recipient)
        return recipient
    }

    /// The recipients of a recipients file (age's `-R` format): one `age1…` per line; empty
    /// lines and lines starting with `#` are ignored.
    ///
    /// - Parameter text: The file's contents.
    /// - Returns: The recipients in file order.
    /// - Throws: `.invalidArgument` naming the first line that is not a recipient, or when there is none.
    public static func recipients(fromFile text: String) throws -> [String] {
        var found: [String] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.hasSuffix("\r") ? line.dropLast() : line[...]
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            do { found.append(try validRecipient(String(trimmed))) } catch {
                throw KeybayError(.invalidArgument, "line \(number + 1) of the recipients file is not an age X25519 recipient (age1…)")
            }
        }
        guard !found.isEmpty else { throw KeybayError(.invalidArgument, "the recipients file names no recipient") }
        return found
    }

    /// The private keys of an identity file as `age-keygen` writes it: `AGE-SECRET-KEY-1…`
    /// lines; empty lines and `#` comments ignored. Nothing of a line is ever put in a message.
    static func identities(fromFile bytes: [UInt8]) throws -> [SecureBytes] {
        var keys: [SecureBytes] = []
        for (number, line) in bytes.split(separator: 0x0a, omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.last == 0x0d ? line.dropLast() : line
            if trimmed.isEmpty || trimmed.first == 0x23 { continue }
            guard let key = AgeX25519.parseIdentity(trimmed) else {
                throw KeybayError(.invalidArgument, "line \(number + 1) of the identity file is not an age X25519 identity (AGE-SECRET-KEY-1…)")
            }
            keys.append(key)
        }
        guard !keys.isEmpty else { throw KeybayError(.invalidArgument, "the identity file holds no identity") }
        return keys
    }

    /// A new X25519 identity: its `AGE-SECRET-KEY-1…` line (no newline) and its `age1…` recipient.
    ///
    /// - Returns: The identity in guarded memory, and its recipient.
    public static func generateIdentity() -> (identity: SecureBytes, recipient: String) {
        let key = SecureBytes(randomCount: 32)
        return (SecureBytes(copying: AgeX25519.encodeIdentity(key)), AgeX25519.encodeRecipient(AgeX25519.publicKey(of: key)))
    }
}
