// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// The secret descriptors given. Each is bound to one method (`CommandInteraction` keeps the
/// binding): the unlock descriptors to the method the command unlocks with, the `--new-*-fd` to
/// the method it enrolls or changes, for its new secret only.
struct SecretDescriptors {
    var passphrase: Int32?
    var pin: Int32?
    var recoveryKey: Int32?
    var newPassphrase: Int32?
    var newPIN: Int32?

    static let options: Set<String> = ["--passphrase-fd", "--pin-fd", "--recovery-key-fd", "--new-passphrase-fd", "--new-pin-fd"]

    mutating func set(_ option: String, _ fd: Int32) {
        switch option {
        case "--passphrase-fd": passphrase = fd
        case "--pin-fd": pin = fd
        case "--recovery-key-fd": recoveryKey = fd
        case "--new-passphrase-fd": newPassphrase = fd
        default: newPIN = fd
        }
    }

    /// The unlock descriptor of `kind`, if one was given.
    func unlock(_ kind: KeybaySecretRequest.Kind) -> Int32? {
        switch kind {
        case .passphrase: passphrase
        case .pin: pin
        case .recoveryKey: recoveryKey
        }
    }

    /// The descriptor of a new secret of `kind`, if one was given.
    func new(_ kind: KeybaySecretRequest.Kind) -> Int32? {
        switch kind {
        case .passphrase: newPassphrase
        case .pin: newPIN
        case .recoveryKey: nil
        }
    }

    /// The option a script would use for `request`.
    static func option(for request: KeybaySecretRequest) -> String {
        switch request.kind {
        case .passphrase: request.isNew ? "--new-passphrase-fd" : "--passphrase-fd"
        case .pin: request.isNew ? "--new-pin-fd" : "--pin-fd"
        case .recoveryKey: "--recovery-key-fd"
        }
    }

    /// Refuses a descriptor that is not open, before the CLI opens anything itself: a closed
    /// number would otherwise be taken by the first file Keybay opens (its own directory) and
    /// read as the secret.
    func checkOpen() throws {
        // One call per option rather than a table of (option, fd) pairs: such a table's generic
        // metadata is built at run time, on every command's start.
        try Self.checkOpen(passphrase, "--passphrase-fd")
        try Self.checkOpen(pin, "--pin-fd")
        try Self.checkOpen(recoveryKey, "--recovery-key-fd")
        try Self.checkOpen(newPassphrase, "--new-passphrase-fd")
        try Self.checkOpen(newPIN, "--new-pin-fd")
    }

    private static func checkOpen(_ fd: Int32?, _ option: String) throws {
        if let fd, fcntl(fd, F_GETFD) == -1 {
            throw KeybayError(.invalidArgument, "descriptor \(fd), given to \(option), is not open")
        }
    }
}

/// Whom a secret request is for: an enrolled method (its id), or the method a plugin is enrolling
/// (its plugin's id; a root's requests look the same, and its id is never the one enrolled).
enum SecretOwner: Equatable {
    case method(String)
    case enrolling(String)
}

extension KeybaySecretRequest {
    /// Nil for a request made outside a plugin call: no descriptor answers it.
    var owner: SecretOwner? {
        methodID.map { .method($0) } ?? pluginID.map { .enrolling($0) }
    }
}
