// SPDX-License-Identifier: Apache-2.0
/// A snapshot and the identity of the file it came from.
struct Generation: Sendable {
    let snapshot: StoreSnapshot
    let identity: FileIdentity
}

/// What a write that put a new store file in place left: the generation it holds and, when
/// the write took effect but could not be confirmed durable, why (`KeybayError.tookEffect`).
struct Landed: Sendable {
    let generation: Generation
    let unconfirmed: KeybayError?

    /// The generation, or the failure to confirm it, thrown.
    func confirmed() throws -> Generation {
        if let unconfirmed { throw unconfirmed }
        return generation
    }
}

extension StoreEngine {
    /// Authenticates a file as read: its package opened as `unlock` says (or with the keys of
    /// `previous` when the package is the same), then its manifest.
    func authenticate(_ read: StoreRead, unlock: Unlock = .platform, reusing previous: StoreSnapshot? = nil) throws -> Generation {
        do {
            let layout = try StoreLayout.decode(read.bytes, context: storePath)
            let opened: Keyring.Opened
            if let previous, previous.hasSamePackage(as: layout, in: read.bytes) {
                opened = Keyring.Opened(keys: previous.keys, methods: previous.methods)
            } else {
                opened = try keyring.open(layout, in: read.bytes, unlock: unlock)
            }
            let snapshot = try StoreSnapshot.authenticate(file: read.bytes, layout: layout, keys: opened.keys, methods: opened.methods,
                                                          domain: keyring.domain, context: storePath)
            return Generation(snapshot: snapshot, identity: read.identity)
        } catch let e as KeybayError where [.malformed, .integrity, .unsupported, .rolledBack].contains(e.code) {
            // The bytes of this file are what failed.
            throw e.with(path: storePath)
        }
    }

    /// Reads and authenticates the live file; nil if there is none. Only a platform-only store,
    /// or one whose package `previous` already unlocked, opens.
    func load(_ file: StoreFile, reusing previous: StoreSnapshot?) throws -> Generation? {
        guard let read = try file.read() else { return nil }
        do {
            return try authenticate(StoreRead(bytes: read.bytes, identity: read.identity), reusing: previous)
        } catch let e as KeybayError where e.code == .authenticationRequired && previous != nil {
            throw KeybayError(.keyChanged, "another process changed the unlock methods of \(storePath) (a new store key); open it again")
        }
    }

    /// Re-reads the live file under a shared lock (another process replaced it).
    func reload(_ file: StoreFile, reusing previous: StoreSnapshot) throws -> Generation {
        guard followsOtherWriters else { throw replacedUnderHold() }
        return try file.withLock(.shared) {
            guard let generation = try load(file, reusing: previous) else { throw try missingStore() }
            return generation
        }
    }

    /// Under the lock: the live generation. If the file is still the one `previous` came from
    /// (same inode, size and times: every write renames a new file in), it is reused as it is;
    /// otherwise the file is read and authenticated again.
    func current(_ file: StoreFile, previous: Generation) throws -> Generation? {
        if let identity = file.identity(), identity == previous.identity { return previous }
        guard followsOtherWriters else { throw replacedUnderHold() }
        return try load(file, reusing: previous.snapshot)
    }

    /// For an engine that does not follow other writers: the live file is not the one it holds.
    private func replacedUnderHold() -> KeybayError {
        KeybayError(.keyChanged, "\(storePath) is no longer the file that was unlocked (another process wrote it, a copy was put back, or it was removed); unlock it again")
            .with(path: storePath)
    }
}
