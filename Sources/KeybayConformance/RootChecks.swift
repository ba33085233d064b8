// SPDX-License-Identifier: Apache-2.0
import Keybay

/// The checks of a root plugin, in a temporary state home under /tmp: create, seal and open,
/// the rollback floor when it keeps one, what wrong inputs give, reset, its texts.
enum RootChecks {
    static let table: [Check] = [
        Check("root-absent", "exists is false before create", appliesTo: Applies.roots) { run in
            let root = try run.rootUnderTest()
            return .check(try !root.exists(), "root_exists said 1 in an empty state directory \(run.stateHome ?? "")")
        },
        Check("root-create", "create returns a provider state of 1 to 64 bytes", appliesTo: Applies.roots) { run in
            let state = try run.rootUnderTest().create()
            run.providerState = state
            return .check(!state.isEmpty && state.count <= 64, "returned \(state.count) bytes")
        },
        Check("root-exists", "exists is true after create", appliesTo: Applies.roots) { run in
            .check(try run.rootUnderTest().exists(), "root_exists said 0 after root_create succeeded")
        },
        expect("root-no-overwrite", "create never overwrites (ROOT_EXISTS)", .stateConflict) { root, _ in _ = try root.create() },
        Check("root-seal-open", "open returns what seal sealed", appliesTo: Applies.roots) { run in
            let root = try run.rootUnderTest(), state = try run.needs(run.providerState, "provider state")
            let secret = SecureBytes(copying: Array("a 57-byte package would go here, any length is fine....".utf8))
            let aad = Array("aad".utf8)
            let sealed = try root.seal(secret, aad: aad, providerState: state)
            run.sealed = (sealed, secret, aad)
            return .check(try root.open(sealed, aad: aad, providerState: state).package.equals(secret), "root_open of what root_seal returned gave other bytes")
        },
        Check("floor-starts-at-0", "a new root's rollback floor is 0", appliesTo: keepsFloor) { run in
            let root = try run.rootUnderTest(), state = try run.needs(run.providerState, "provider state"), sealed = try run.needs(run.sealed, "sealed package")
            let initial = try root.open(sealed.data, aad: sealed.aad, providerState: state).floor
            return .check(initial == 0, "the floor of a new root is \(initial)")
        },
        Check("floor-rises", "the rollback floor rises and never falls", appliesTo: keepsFloor) { run in
            let root = try run.rootUnderTest(), state = try run.needs(run.providerState, "provider state"), sealed = try run.needs(run.sealed, "sealed package")
            try root.raiseFloor(to: 3, providerState: state)
            try root.raiseFloor(to: 2, providerState: state)
            let floor = try root.open(sealed.data, aad: sealed.aad, providerState: state).floor
            return .check(floor == 3, "floor \(floor) after raising to 3, then to 2")
        },
        expect("floor-other-state", "raising the floor with another provider state gives ROOT_MISMATCH", .platformKeyInvalidated, appliesTo: keepsFloor) { root, run in
            var other = try run.needs(run.providerState, "provider state")
            other[0] ^= 1
            try root.raiseFloor(to: 4, providerState: other)
        },
        expect("root-tampered", "tampered sealed data gives INTEGRITY", .integrity) { root, run in
            let state = try run.needs(run.providerState, "provider state"), sealed = try run.needs(run.sealed, "sealed package")
            var tampered = sealed.data
            tampered[tampered.count / 2] ^= 1
            _ = try root.open(tampered, aad: sealed.aad, providerState: state)
        },
        expect("root-other-aad", "another AAD gives INTEGRITY", .integrity) { root, run in
            let state = try run.needs(run.providerState, "provider state"), sealed = try run.needs(run.sealed, "sealed package")
            _ = try root.open(sealed.data, aad: [1], providerState: state)
        },
        expect("root-other-state", "another provider state gives ROOT_MISMATCH before decrypting", .platformKeyInvalidated) { root, run in
            let sealed = try run.needs(run.sealed, "sealed package")
            var other = try run.needs(run.providerState, "provider state")
            other[other.count - 1] ^= 1 // the root's own part (a tagged state names the root first)
            _ = try root.open(sealed.data, aad: sealed.aad, providerState: other)
        },
        Check("root-reset", "reset removes the root", appliesTo: Applies.roots) { run in
            let root = try run.rootUnderTest()
            try root.reset()
            return .check(try !root.exists(), "root_exists said 1 after root_reset")
        },
        expect("root-reset-again", "reset is idempotent", nil) { root, _ in try root.reset() },
        expect("root-missing", "open without a root gives ROOT_MISSING", .platformKeyInvalidated) { root, run in
            let state = try run.needs(run.providerState, "provider state"), sealed = try run.needs(run.sealed, "sealed package")
            _ = try root.open(sealed.data, aad: sealed.aad, providerState: state)
        },
        Check("root-location", "location names where the root lives", appliesTo: Applies.roots) { run in
            let location = try run.rootUnderTest().location
            return .check(!location.isEmpty && !location.hasPrefix("(unknown"), "location: \(location)", shown: location)
        },
        Check("root-protection", "protection note is one line", appliesTo: Applies.roots { $0.plugin?.offersProtection == true }) { run in
            let note = try run.rootUnderTest().protection
            return .check(note.map { !$0.isEmpty && !$0.contains("\n") } ?? false,
                          note.map { "the note is \($0.isEmpty ? "empty" : "several lines")" } ?? "root_protection failed", shown: note ?? "")
        },
        Check("root-change-credential", "--change-credential", appliesTo: Applies.roots { $0.changeCredential != nil }) { _ in
            .skip("a root plugin has no credential to change; the command was not run")
        },
    ]

    /// The root keeps a rollback floor (the root is made by the first root check).
    static let keepsFloor = Applies.roots { $0.root?.keepsFloor == true }

    /// A root call that must return `want` (nil: OK).
    static func expect(_ key: String, _ name: String, _ want: KeybayError.Code?, appliesTo: @escaping @Sendable (CheckRun) -> Bool = Applies.roots,
                       _ body: @escaping @Sendable (RootUnderCheck, CheckRun) throws -> Void) -> Check {
        Check(key, name, appliesTo: appliesTo) { run in
            let root = try run.rootUnderTest()
            let got = CallOutcome { try body(root, run) }
            return .check(got.code == want, got.code == want ? "" : "returned \(got.text); expected \(want.map { "[\($0.rawValue)]" } ?? "OK")")
        }
    }
}
