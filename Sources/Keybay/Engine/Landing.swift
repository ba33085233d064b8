// SPDX-License-Identifier: Apache-2.0
extension StoreEngine {
    /// After the rename (or link) put `encoded` in place: it is the store now, whatever fails
    /// from here. `afterRename` is why the directory's fsync failed, if it did; otherwise the file
    /// is read back and verified (`confirm` opens a new package with the root). A failure is
    /// returned, never thrown: the generation as encoded (`known`: its keys, from memory), with an
    /// identity no file has, so the next operation reads the store again.
    func land(_ encoded: EncodedStore, in file: StoreFile, afterRename: KeybayError?, what: String, domain: [UInt8]? = nil,
              known: Keyring.Opened, confirm: (StoreLayout) throws -> Keyring.Opened) throws -> Landed {
        var failure = afterRename
        if failure == nil {
            do {
                return Landed(generation: try verifyWritten(encoded, in: file, domain: domain, keys: confirm), unconfirmed: nil)
            } catch let e as KeybayError {
                failure = e
            }
        }
        let layout = try StoreLayout.decode(encoded.file, context: storePath)
        let snapshot = try StoreSnapshot.authenticateWritten(encoded, layout: layout, keys: known.keys, methods: known.methods,
                                                             domain: domain ?? keyring.domain, context: storePath)
        return Landed(generation: Generation(snapshot: snapshot, identity: .unknown), unconfirmed: .unconfirmed(what, cause: failure!))
    }

    /// Reads back what was just made durable: it must equal, byte for byte, what was encoded
    /// (from authenticated parts, with every digest computed or copied), a new package must open
    /// with the root to the generation it was sealed from, and the manifest must decrypt to
    /// exactly the plaintext encoded. Frame digests are not hashed a second time.
    private func verifyWritten(_ encoded: EncodedStore, in file: StoreFile, domain: [UInt8]? = nil,
                               keys: (StoreLayout) throws -> Keyring.Opened) throws -> Generation {
        guard let identity = try file.readBack(equals: encoded.file) else {
            throw KeybayError(.io, "\(storePath) does not read back as written").with(path: storePath, reason: "read-back-mismatch")
        }
        // The encoded bytes are now known to be what the disk holds.
        let layout = try StoreLayout.decode(encoded.file, context: storePath)
        let opened = try keys(layout)
        let snapshot = try StoreSnapshot.authenticateWritten(encoded, layout: layout, keys: opened.keys, methods: opened.methods,
                                                             domain: domain ?? keyring.domain, context: storePath)
        return Generation(snapshot: snapshot, identity: identity)
    }
}
