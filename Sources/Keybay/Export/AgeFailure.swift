// SPDX-License-Identifier: Apache-2.0
/// Why an age file could not be read, in the classes the age test vectors distinguish
/// (C2SP CCTV `age/README.md`, `expect`), so a lower-level failure is never reported as a
/// higher-level one. `keybayError` maps them onto Keybay's codes.
struct AgeFailure: Error, Equatable {
    enum Kind: Equatable {
        /// The header does not parse (`header failure`); also a version other than v1.
        case header
        /// The header parses but no stanza is for any identity given (`no match`).
        case noMatch
        /// A file key was unwrapped but the header MAC does not match (`HMAC failure`).
        case mac
        /// The STREAM payload does not decrypt all the way to its end (`payload failure`).
        case payload
    }

    let kind: Kind
    /// What was wrong, never a secret.
    let detail: String

    static func header(_ detail: String) -> AgeFailure { AgeFailure(kind: .header, detail: detail) }

    /// `.malformed` for a header, `.wrongSecret` when no identity matches, `.integrity` for a MAC
    /// or payload that does not authenticate; `.unsupported` for another age version.
    func keybayError(_ context: String) -> KeybayError {
        let code: KeybayError.Code
        switch kind {
        case .header: code = detail.hasPrefix("unsupported") ? .unsupported : .malformed
        case .noMatch: code = .wrongSecret
        case .mac, .payload: code = .integrity
        }
        return KeybayError(code, "\(context): \(detail)")
    }
}
