// SPDX-License-Identifier: Apache-2.0
import Glibc

/// What `unlock` hands to the agent: the store it opened, the file it read (the agent holds the
/// store only while that very file is in place), the generation's keys and how long to hold
/// them. The agent never reaches the store's root: the unlocking process has opened the package
/// with it, checked the rollback floor and authenticated the file; the agent authenticates the
/// same file again with these keys before it serves anything.
struct AgentHandoff: Sendable {
    let store: AgentStoreRef
    /// How long the agent holds the store, in seconds; 0 until `lock` (or the agent ends).
    let seconds: UInt64
    /// The live file the keys belong to.
    let identity: FileIdentity
    /// The store's root (for a configuration that insists on one; the agent loads no plugin).
    let rootID: String
    /// The store's storage domain (docs/format.md §4): public, bound into every AAD.
    let domain: [UInt8]
    /// The generation's keys: Kstore in guarded memory, its store id and epoch.
    let keys: StoreKeys

    var encodedBytes: Int {
        store.encodedBytes + 8 + 7 * 8 + AgentFrame.lp(rootID) + AgentFrame.lp(domain.count) + AgentFrame.lp(keys.storeId.count)
            + 8 + AgentFrame.lp(keys.storeKey.count)
    }

    func encode(into frame: inout AgentFrame) {
        store.encode(into: &frame)
        frame.u64(seconds)
        identity.encode(into: &frame)
        frame.text(rootID)
        frame.bytes(domain)
        frame.bytes(keys.storeId)
        frame.u64(keys.epoch)
        keys.storeKey.withUnsafeBytes { frame.bytes($0) }
    }

    static func decode(_ reader: inout ByteReader) throws -> AgentHandoff {
        let store = try AgentStoreRef.decode(&reader)
        let seconds = try reader.u64("seconds")
        let identity = try FileIdentity.decode(&reader)
        let rootID = try reader.text("root id", maxLength: 64)
        guard MethodNames.isValidPluginID(rootID) else { throw reader.malformed("root id is not a plugin id") }
        let domain = Array(try reader.lengthPrefixed("storage domain", maxLength: 32))
        let storeId = Array(try reader.lengthPrefixed("store id", maxLength: Suite1.storeIdBytes))
        let epoch = try reader.u64("epoch")
        let key = try reader.lengthPrefixed("store key", maxLength: Suite1.storeKeyBytes)
        guard domain.count == 32, storeId.count == Suite1.storeIdBytes, key.count == Suite1.storeKeyBytes else {
            throw reader.malformed("a storage domain, store id or store key of the wrong length")
        }
        return AgentHandoff(store: store, seconds: seconds, identity: identity, rootID: rootID, domain: domain,
                            keys: StoreKeys(suite: .methods, storeId: storeId, epoch: epoch, storeKey: SecureBytes(copying: key)))
    }
}

extension FileIdentity {
    func encode(into frame: inout AgentFrame) {
        for v in [device, inode, UInt64(bitPattern: size), UInt64(bitPattern: Int64(modifiedSeconds)), UInt64(bitPattern: Int64(modifiedNanoseconds)),
                  UInt64(bitPattern: Int64(changedSeconds)), UInt64(bitPattern: Int64(changedNanoseconds))] {
            frame.u64(v)
        }
    }

    static func decode(_ reader: inout ByteReader) throws -> FileIdentity {
        var st = stat()
        st.st_dev = UInt(try reader.u64("device"))
        st.st_ino = UInt(try reader.u64("inode"))
        st.st_size = Int(try reader.i64("size"))
        st.st_mtim.tv_sec = Int(try reader.i64("modification time"))
        st.st_mtim.tv_nsec = Int(try reader.i64("modification time"))
        st.st_ctim.tv_sec = Int(try reader.i64("change time"))
        st.st_ctim.tv_nsec = Int(try reader.i64("change time"))
        return FileIdentity(st)
    }
}
