// SPDX-License-Identifier: Apache-2.0
extension StoreEngine {
    /// Root recovery: under the store's exclusive lock, the root seals its key again to the
    /// platform state now in effect, opened with `recoverySecret`; then the root must open the
    /// store's key package as it is. The store file is not rewritten (its provider state stays
    /// valid); the root replaces its own file in one rename.
    func resealRoot(recoverySecret: SecureBytes) throws {
        guard let file = existingFile else {
            throw KeybayError(.storeNotFound, "no store at \(storePath)").with(path: storePath)
        }
        try file.withLock(.exclusive) {
            guard let read = try file.read() else {
                throw KeybayError(.storeNotFound, "no store at \(storePath)").with(path: storePath)
            }
            var reader = ByteReader(read.bytes, context: storePath)
            let bootstrap = try Bootstrap.decode(&reader)
            let sealedPackage = try reader.take(bootstrap.sealedPackageLength, "sealed package")
            try root.reseal(providerState: bootstrap.providerState, recoverySecret: recoverySecret)
            try keyring.checkRootOpens(bootstrap, sealedPackage: sealedPackage)
        }
    }
}
