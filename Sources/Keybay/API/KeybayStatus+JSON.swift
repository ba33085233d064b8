// SPDX-License-Identifier: Apache-2.0
extension KeybayStatus {
    /// The status as `keybay-methods status --json` prints it (and `keybay_status_json`
    /// returns it): `state`, `storePath`, `rootPlugin`, `rootLocation`, `methods` (each `id`,
    /// `plugin`, `label`), `protection`, `leftoverRoots` (each `plugin`, `location`),
    /// `backupExclusion` (``KeybayBackupExclusion/jsonValue``).
    public var jsonValue: KeybayJSON.Value {
        .object([
            ("state", .string(state.rawValue)),
            ("storePath", .string(storePath)),
            ("rootPlugin", .string(rootPlugin)),
            ("rootLocation", .string(rootLocation)),
            ("methods", .array(methods.map(\.jsonValue))),
            ("protection", .string(rootProtection)),
            ("leftoverRoots", .array(leftoverRoots.map { .object([("plugin", .string($0.plugin)), ("location", .string($0.location))]) })),
            ("backupExclusion", backupExclusion.jsonValue),
        ])
    }

    /// ``jsonValue`` as one line of JSON.
    public var json: String { KeybayJSON.render(jsonValue) }
}

extension KeybayMethod {
    /// The method as the CLI's JSON lists it: `id`, `plugin`, `label`.
    public var jsonValue: KeybayJSON.Value {
        .object([("id", .string(id)), ("plugin", .string(plugin)), ("label", .string(label))])
    }
}

extension KeybayBackupExclusion {
    /// The markers in place, as `status --json` and `backup --json` list them: `storeDirectory`
    /// and `rootDirectory`, each an array of marker names.
    public var jsonValue: KeybayJSON.Value {
        .object([("storeDirectory", .array(storeDirectory.map { .string($0) })),
                 ("rootDirectory", .array(rootDirectory.map { .string($0) }))])
    }
}
