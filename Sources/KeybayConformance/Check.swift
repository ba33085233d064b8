// SPDX-License-Identifier: Apache-2.0
/// One conformance check: a row of the table `PluginCheck.table`. Its name, which plugins it
/// applies to, and what it does are one entry: a result is always labelled by the entry that
/// ran, never by its position.
struct Check: Sendable {
    /// Unique in the table; tests and nothing else use it (the output shows `name`).
    let key: String
    /// The line `plugin-check` prints, from the run's inputs (a path, an option, a command).
    let name: @Sendable (CheckRun) -> String
    /// Whether the check applies, from what the checks before it found (the plugin's kind and
    /// flags, what it showed at enrollment) and the run's inputs. Asked when its turn comes.
    let appliesTo: @Sendable (CheckRun) -> Bool
    /// A precondition on the file (it exists, it is named as a plugin): listed only when it fails.
    var quietWhenPassing = false
    /// Runs the check. A thrown error fails it, and every later check that applies is not run.
    let run: @Sendable (CheckRun) throws -> Verdict

    init(_ key: String, _ name: @escaping @Sendable (CheckRun) -> String, appliesTo: @escaping @Sendable (CheckRun) -> Bool,
         quietWhenPassing: Bool = false, run: @escaping @Sendable (CheckRun) throws -> Verdict) {
        self.key = key
        self.name = name
        self.appliesTo = appliesTo
        self.quietWhenPassing = quietWhenPassing
        self.run = run
    }

    /// A check whose name does not depend on the run.
    init(_ key: String, _ name: String, appliesTo: @escaping @Sendable (CheckRun) -> Bool, quietWhenPassing: Bool = false,
         run: @escaping @Sendable (CheckRun) throws -> Verdict) {
        self.init(key, { _ in name }, appliesTo: appliesTo, quietWhenPassing: quietWhenPassing, run: run)
    }
}

/// Which plugins a check applies to.
enum Applies {
    /// Every file given: the checks before the plugin is loaded, and those of any plugin.
    static let always: @Sendable (CheckRun) -> Bool = { _ in true }
    static let methods: @Sendable (CheckRun) -> Bool = { $0.plugin?.isRoot == false }
    static let roots: @Sendable (CheckRun) -> Bool = { $0.plugin?.isRoot == true }
    static func methods(_ also: @escaping @Sendable (CheckRun) -> Bool) -> @Sendable (CheckRun) -> Bool {
        { methods($0) && also($0) }
    }
    static func roots(_ also: @escaping @Sendable (CheckRun) -> Bool) -> @Sendable (CheckRun) -> Bool {
        { roots($0) && also($0) }
    }
}
