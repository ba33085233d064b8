// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The C side's layering: a C file includes only headers of its own target and of the targets it
/// depends on (SwiftPM's dependencies, acyclic, so includes go down); no target depends on a
/// plugin (the code plugins share sits in `Plugins/Support`, below them), and nothing of
/// `Sources` on anything of `Plugins`.
struct CIncludes {
    /// A C target: SwiftPM's, or one of the helpers' folders built by the Makefile.
    struct Target {
        let name: String
        let path: String
        let dependencies: [String]
    }

    let targets: [Target]

    /// The credential helpers, built by the Makefile against the C API's header.
    static let helperTargets = [
        Target(name: "integrations/common", path: "integrations/common", dependencies: ["CKeybay"]),
        Target(name: "integrations/git", path: "integrations/git", dependencies: ["integrations/common", "CKeybay"]),
        Target(name: "integrations/docker", path: "integrations/docker", dependencies: ["integrations/common", "CKeybay"]),
    ]

    /// The package's targets, from `swift package describe`, and the helpers'. It runs with a
    /// build directory of its own (`scratch`): the package's is locked while `swift test` runs.
    static func ofPackage(scratch: String) throws -> CIncludes {
        let r = try run("/usr/bin/env", ["swift", "package", "--package-path", packageDirectory, "--scratch-path", scratch, "describe", "--type", "json"],
                        environment: ProcessInfo.processInfo.environment)
        guard r.status == 0, let json = try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any],
              let targets = json["targets"] as? [[String: Any]] else { throw CocoaError(.fileReadCorruptFile) }
        return CIncludes(targets: targets.compactMap { t in
            guard let name = t["name"] as? String, let path = t["path"] as? String else { return nil }
            return Target(name: name, path: path, dependencies: t["target_dependencies"] as? [String] ?? [])
        } + helperTargets)
    }

    /// The target a file belongs to: the one with the longest path that holds it.
    func owner(of file: String) -> Target? {
        targets.filter { file.hasPrefix($0.path + "/") }.max { $0.path.count < $1.path.count }
    }

    /// The target and everything it depends on, directly or not.
    func reachable(from name: String) -> Set<String> {
        var seen: Set<String> = [], queue = [name]
        while let next = queue.popLast() {
            guard seen.insert(next).inserted else { continue }
            queue += targets.first { $0.name == next }?.dependencies ?? []
        }
        return seen
    }

    /// A target under `Plugins/` that is not shared code: one plugin.
    static func isPlugin(_ t: Target) -> Bool { t.path.hasPrefix("Plugins/") && !t.path.hasPrefix("Plugins/Support/") }

    /// The names a line `#include`s, in quotes or angle brackets.
    static func includes(in text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            let t = line.drop { $0 == " " || $0 == "\t" }
            guard t.hasPrefix("#"), let r = t.range(of: #"^#\s*include\s*[<"]([^>"]+)[>"]"#, options: .regularExpression) else { return nil }
            return String(t[r].drop { $0 != "<" && $0 != "\"" }.dropFirst().dropLast())
        }
    }

    /// Each include (of `files`: path → text) that names a header of a target its file's target
    /// does not depend on, and each dependency on a plugin. A header none of the files is, is
    /// the system's.
    func violations(files: [String: String]) -> [String] {
        let headers = files.keys.filter { $0.hasSuffix(".h") }
        var found: [String] = []
        for (path, text) in files.sorted(by: { $0.key < $1.key }) {
            guard let from = owner(of: path) else { continue }
            let allowed = reachable(from: from.name)
            let directory = (path as NSString).deletingLastPathComponent
            for name in Self.includes(in: text) {
                let relative = (directory + "/" + name as NSString).standardizingPath
                let candidates = headers.contains(relative) ? [relative] : headers.filter { $0.hasSuffix("/" + name) }
                guard !candidates.isEmpty else { continue }
                let owners = candidates.compactMap { owner(of: $0) }
                if !owners.contains(where: { allowed.contains($0.name) }) {
                    found.append("\(path) includes \(name) (\(owners.map(\.name).joined(separator: ", "))), which \(from.name) does not depend on")
                }
            }
        }
        for t in targets {
            for d in t.dependencies {
                guard let target = targets.first(where: { $0.name == d }) else { continue }
                if Self.isPlugin(target) { found.append("\(t.name) depends on the plugin \(d)") }
                if t.path.hasPrefix("Sources/") && target.path.hasPrefix("Plugins/") { found.append("\(t.name) (Sources) depends on \(d) (Plugins)") }
            }
        }
        return found
    }
}
