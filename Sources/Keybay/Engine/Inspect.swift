// SPDX-License-Identifier: Apache-2.0
/// What is on disk for one application, as the engine finds it: the API's `KeybayStatus` is
/// made from it.
struct StoreInspection: Sendable {
    /// What exists.
    enum State: Sendable {
        case absent, platformOnly, protected, rootOnly, storeOnly
    }

    let state: State
    /// The store's root (the one its bootstrap names; with no store, the one a new store gets).
    let root: any RootProvider
    /// The enrolled methods as stored (their parameters included), for a protected store.
    let methods: [MethodEnvelope.Public]
    /// Roots an interrupted root move left, which the store does not use.
    let leftoverRoots: [any RootProvider]
    /// The backup markers in place on the store's and the root's directories.
    let backupMarkers: BackupMarkers

    /// The root's own note on what it protects against, and what the methods add.
    var protectionNote: String {
        let rootNote = root.protection ?? "platform root \(root.id) (it gives no note on what it protects against)"
        return methods.isEmpty ? rootNote + "; enroll an unlock method for more"
                               : rootNote + "; opening also needs one of the \(methods.count) enrolled method(s)"
    }
}

extension StoreEngine {
    /// The state, from the engine's read and the root's `exists`; for a protected store, the
    /// package is opened with the root to list its methods. Never calls a method plugin, never
    /// creates or repairs anything.
    func inspect() throws -> StoreInspection {
        let rootExists = try root.exists()
        var state: StoreInspection.State = rootExists ? .rootOnly : .absent
        var methods: [MethodEnvelope.Public] = []
        if let found {
            var reader = ByteReader(found.bytes, context: storePath)
            let bootstrap = try Bootstrap.decode(&reader)
            let sealedPackage = try reader.take(bootstrap.sealedPackageLength, "sealed package")
            if !rootExists {
                state = .storeOnly
            } else if bootstrap.suite == .platform {
                state = .platformOnly
            } else {
                state = .protected
                methods = try keyring.methods(bootstrap, sealedPackage: sealedPackage)
            }
        }
        return StoreInspection(state: state, root: root, methods: methods, leftoverRoots: try leftoverRoots(storeFile(create: false)),
                               backupMarkers: try backupMarkers())
    }
}
