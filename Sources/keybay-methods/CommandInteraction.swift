// SPDX-License-Identifier: Apache-2.0
import CSodium
import Glibc
import Keybay
import KeybayPrompt

/// Secrets for the CLI: from the secret descriptors (read once, to EOF, one trailing newline
/// removed) given for the method that asks (`descriptor(for:)`), else where `KeybayAsker` says
/// (a pinentry named by KEYBAY_PINENTRY, the controlling terminal, `pinentry` on PATH); never
/// from an argument. `--no-input`, or nowhere to ask, turns every question into
/// `.interactionRequired` (exit 4). A secret a method plugin shows (a recovery key) never comes
/// here: the command prepares the enrollment, and prints the prepared enrollment's `shownSecret`
/// once it is stored (`StoredEnrollment`); a root's (root recovery) is held for `init` to print.
final class CommandInteraction: KeybayInteraction, @unchecked Sendable {
    let descriptors: SecretDescriptors
    let noInput: Bool
    /// Whether a new secret may come from the unlock descriptor of its kind, when that is bound
    /// to the method being enrolled (`enroll`: yes; `change`: never).
    var newFromUnlockDescriptors = true
    /// The plugin of the method being enrolled or changed: the `--new-*-fd` answer its new secret.
    var enrolling: String?
    /// Whom the unlock descriptors answer: the method the command unlocks with, once chosen; when
    /// nothing unlocks (an enroll on a store without methods), the method being enrolled, once
    /// it took one. Bound once, for the whole command (its retries too).
    private(set) var unlockOwner: SecretOwner?
    private var fromDescriptor: [Int32: SecureBytes] = [:]
    /// Whether the last secret came from a pinentry (only those are asked for again).
    private var answeredByPinentry = false

    init(descriptors: SecretDescriptors, noInput: Bool) {
        self.descriptors = descriptors
        self.noInput = noInput
    }

    /// The command unlocks with the method `id`: the unlock descriptors are its, unless they
    /// were bound already.
    func unlocks(with id: String) {
        if unlockOwner == nil { unlockOwner = .method(id) }
    }

    /// The descriptor given for `request`'s method, if any: a new secret of the method being
    /// enrolled from its `--new-*-fd` (else, `newFromUnlockDescriptors`, from the unlock
    /// descriptor), any other secret from the unlock descriptor, and only for `unlockOwner`.
    func descriptor(for request: KeybaySecretRequest) -> Int32? {
        guard let owner = request.owner else { return nil }
        let enrolled = enrolling.map { owner == .enrolling($0) } ?? false
        if request.isNew, enrolled, let fd = descriptors.new(request.kind) { return fd }
        guard let fd = descriptors.unlock(request.kind), !request.isNew || (enrolled && newFromUnlockDescriptors) else { return nil }
        if unlockOwner == nil && enrolled { unlockOwner = owner }
        // The policy opens a store of one method with it, unnamed: the first method that asks
        // to be unlocked is the one the command unlocks with (any other was named or chosen).
        if unlockOwner == nil, case .method = owner, !request.isNew { unlockOwner = owner }
        return unlockOwner == owner ? fd : nil
    }

    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let what = (request.isNew ? "new " : "") + request.kind.displayName
        answeredByPinentry = false
        if let fd = descriptor(for: request) {
            let secret = try descriptorSecret(fd, what: what)
            guard secret.count <= buffer.count else {
                throw KeybayError(.invalidArgument, "the \(what) read from descriptor \(fd) is longer than \(buffer.count) bytes")
            }
            secret.withUnsafeBytes { buffer.copyMemory(from: $0) }
            return secret.count
        }
        let option = SecretDescriptors.option(for: request)
        // Given, that option's descriptor is another method's: naming it would not help.
        let bound = (request.isNew ? descriptors.new(request.kind) : descriptors.unlock(request.kind)) != nil
            ? "\(option) answers only the method it was given for" : nil
        guard !noInput else { throw KeybayError(.interactionRequired, "a \(what) is needed but --no-input was given (\(bound ?? "\(option) N gives it from a descriptor"))") }
        switch try KeybayAsker.current() {
        case .terminal(let terminal)?:
            return try terminal.askSecret(request, into: buffer)
        case .pinentry(let pinentry)?:
            let n = try pinentry.askSecret(request, into: buffer)
            answeredByPinentry = true
            return n
        case nil:
            throw KeybayError(.interactionRequired, "a \(what) is needed but there is no terminal and no pinentry program (\(bound ?? "use \(option)"))")
        }
    }

    /// Plugins' diagnostic lines: errors by default; `KEYBAY_LOG=debug|info|error` sets the least
    /// level shown (read when a plugin first logs, not at start-up).
    var logLevel: KeybayLogLevel {
        switch getenv("KEYBAY_LOG").map({ String(cString: $0) }) {
        case "debug": .debug
        case "info": .info
        default: .error
        }
    }

    func log(_ text: String, level: KeybayLogLevel) {
        Output.error("\(level == .error ? "error" : level == .info ? "info" : "debug"): \(text)")
    }

    func message(_ text: String, level: KeybayMessageLevel) {
        KeybayTerminalInteraction().message(text, level: level)
    }

    /// A secret a root shows while it is created (`init --opt recovery=yes` on tpm2): held, and
    /// printed by `init` once the store is in place (`shownByRoot`). A method's never comes here.
    private(set) var shownByRoot: KeybayShownSecret?

    func showSecret(_ secret: KeybayShownSecret) throws {
        try ShownSecretOutput.check(secret)
        shownByRoot = secret
    }

    func confirm(_ question: String) throws -> Bool {
        // The question names what needs the user (a locked keyring): say it in the error too.
        guard !noInput else { throw KeybayError(.interactionRequired, "a confirmation is needed (\(question)) but --no-input was given") }
        guard let asker = try KeybayAsker.current() else {
            throw KeybayError(.interactionRequired, "a confirmation is needed (\(question)) but there is no terminal and no pinentry program")
        }
        return try asker.interaction.confirm(question)
    }

    /// A wrong secret is asked for again only when a pinentry answered it: a descriptor would
    /// give the same answer, and the terminal's fails at once (as it always has).
    func mayAskAgain(after failure: KeybayError) -> Bool { answeredByPinentry }

    /// Asks the user to pick one of several methods on the terminal (a pinentry offers no list).
    func chooseMethod(_ methods: [KeybayMethod]) throws -> String {
        let id = try choose(methods).id
        unlocks(with: id)
        return id
    }

    private func choose(_ methods: [KeybayMethod]) throws -> KeybayMethod {
        guard !noInput, KeybayTerminalInteraction.isAvailable else {
            let which = noInput ? " (\(methods.map { "\($0.id) \($0.plugin) \($0.label)" }.joined(separator: "; ")))" : ""
            throw KeybayError(.interactionRequired, "the store has several methods\(noInput ? "" : " and there is no terminal"); choose one with --method\(which)")
                .listing(methods)
        }
        return try KeybayTerminalInteraction().choose(methods)
    }

    /// The secret on descriptor `fd` (read once, to EOF, one trailing newline removed).
    func descriptorSecret(_ fd: Int32, what: String) throws -> SecureBytes {
        if let cached = fromDescriptor[fd] { return cached }
        let capacity = 64 * 1024
        // plugin-check reads --pin-fd before anything else has started libsodium.
        guard sodium_init() >= 0, let raw = sodium_malloc(capacity) else { throw KeybayError(.io, "out of memory") }
        defer { sodium_free(raw) }
        var n = 0
        while n < capacity {
            let r = read(fd, raw + n, capacity - n)
            if r < 0 { if errno == EINTR { continue }; throw KeybayError(.invalidArgument, "cannot read the \(what) from descriptor \(fd): \(String(cString: strerror(errno)))") }
            if r == 0 { break }
            n += r
        }
        let bytes = raw.assumingMemoryBound(to: UInt8.self)
        if n > 0 && bytes[n - 1] == 0x0a { n -= 1 }
        guard n > 0 else { throw KeybayError(.invalidArgument, "descriptor \(fd) gave an empty \(what)") }
        let secret = SecureBytes(copying: UnsafeRawBufferPointer(start: raw, count: n))
        fromDescriptor[fd] = secret
        return secret
    }
}
