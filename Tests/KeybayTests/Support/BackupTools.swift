// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// Backups of a directory made with the real tools as users run them, each reporting the paths
/// (relative to the backed-up directory) that its archive holds. Everything a tool keeps (its
/// archive, its cache, borg's keys and security directory) lives under `scratch`; a tool that is
/// missing fails the test (scripts/setup.sh installs them).
struct BackupTools {
    let scratch: String

    struct Failure: Error, CustomStringConvertible { let description: String }

    private var environment: [String: String] {
        ["PATH": "/usr/bin:/bin", "HOME": scratch, "BORG_BASE_DIR": scratch + "/borg-base",
         "BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK": "yes", "BORG_RELOCATED_REPO_ACCESS_IS_OK": "yes"]
    }

    private func check(_ r: RunResult, _ what: String) throws -> RunResult {
        guard r.status == 0 else { throw Failure(description: "\(what) failed (\(r.status)): \(r.stderr)") }
        return r
    }

    private func relative(_ paths: [Substring], to directory: String) -> Set<String> {
        let base = String(directory.dropFirst()) // the tools list paths without the leading '/'
        return Set(paths.map(String.init).compactMap { $0 == base ? "" : $0.hasPrefix(base + "/") ? String($0.dropFirst(base.count + 1)) : nil })
    }

    /// duplicity run as Déjà Dup runs it: the directory included, everything else excluded, and
    /// `--exclude-if-present` for CACHEDIR.TAG and .deja-dup-ignore before the includes.
    func duplicity(_ directory: String) throws -> Set<String> {
        let target = "file://" + scratch + "/duplicity", cache = scratch + "/duplicity-cache"
        _ = try check(run("/usr/bin/duplicity", ["full", "--no-encryption", "--archive-dir=" + cache,
                                                  "--exclude-if-present=CACHEDIR.TAG", "--exclude-if-present=.deja-dup-ignore",
                                                  "--include=" + directory, "--exclude=**", "/", target], environment: environment), "duplicity full")
        let listed = try check(run("/usr/bin/duplicity", ["list-current-files", "--no-encryption", "--archive-dir=" + cache, target],
                                   environment: environment), "duplicity list-current-files")
        // Lines: "<weekday> <month> <day> <time> <year> <path>".
        return relative(listed.out.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            return fields.count == 6 ? fields[5] : nil
        }, to: directory)
    }

    /// borg 1.2 with --exclude-nodump.
    func borg(_ directory: String) throws -> Set<String> {
        let repository = scratch + "/borg"
        _ = try check(run("/usr/bin/borg", ["init", "--encryption=none", repository], environment: environment), "borg init")
        _ = try check(run("/usr/bin/borg", ["create", "--exclude-nodump", repository + "::home", directory], environment: environment), "borg create")
        let listed = try check(run("/usr/bin/borg", ["list", repository + "::home", "--format", "{path}{NL}"], environment: environment), "borg list")
        return relative(listed.out.split(separator: "\n"), to: directory)
    }

    /// tar with --exclude-tag=.deja-dup-ignore (a marked directory is kept, empty but for the tag).
    func tar(_ directory: String) throws -> Set<String> {
        let archive = scratch + "/home.tar"
        _ = try check(run("/usr/bin/tar", ["-cf", archive, "--exclude-tag=.deja-dup-ignore", directory], environment: environment), "tar -c")
        let listed = try check(run("/usr/bin/tar", ["-tf", archive], environment: environment), "tar -t")
        return relative(listed.out.split(separator: "\n").map { $0.hasSuffix("/") ? $0.dropLast() : $0 }, to: directory)
    }
}
