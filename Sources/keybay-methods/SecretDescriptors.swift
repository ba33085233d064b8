// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// Which descriptor answers which secret. A new secret (being chosen) comes from its `--new-*-fd`;
/// `enroll` also takes it from the unlock descriptor of its kind (there is nothing to unlock),
/// `change` never does (the old and the new secret must not be the same input).
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

    /// The descriptor for `request`, if one was given; `newFromUnlock`: whether a new secret may
    /// come from the unlock descriptor of its kind.
    func descriptor(for request: KeybaySecretRequest, newFromUnlock: Bool) -> Int32? {
        let unlock: Int32?, new: Int32?
        switch request.kind {
        case .passphrase: (unlock, new) = (passphrase, newPassphrase)
        case .pin: (unlock, new) = (pin, newPIN)
        case .recoveryKey: (unlock, new) = (recoveryKey, nil)
        }
        guard request.isNew else { return unlock }
        return new ?? (newFromUnlock ? unlock : nil)
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
