// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// A Flatpak sandbox as the Secret portal sees one: bwrap around a written `/.flatpak-info`
/// naming `app` ([Application] name=). Its `/` is a fresh tmpfs holding the host's top-level
/// directories (bound) and links, so the file at `/.flatpak-info` exists only inside: binding it
/// over a bound host `/` would make bwrap create its mount point in the host's real `/` (the
/// tests may run as root), where every later unsandboxed process would see it.
struct FlatpakSandbox {
    let app: String
    let info: String

    /// Writes the sandbox's `.flatpak-info` under `directory`.
    init(app: String, under directory: String) throws {
        guard access("/usr/bin/bwrap", X_OK) == 0 else {
            throw PrivateSecretService.StartFailure(description: "/usr/bin/bwrap is missing: run scripts/setup.sh (bubblewrap)")
        }
        self.app = app
        info = directory + "/flatpak-info-" + app
        try "[Application]\nname=\(app)\nruntime=runtime/org.freedesktop.Platform/x86_64/24.08\n".write(toFile: info, atomically: true, encoding: .utf8)
    }

    /// bwrap's arguments that run `executable arguments` inside.
    func arguments(_ executable: String, _ arguments: [String]) throws -> [String] {
        var bind = ["--tmpfs", "/"]
        for name in try FileManager.default.contentsOfDirectory(atPath: "/").sorted() where !["proc", "dev", ".flatpak-info"].contains(name) {
            let path = "/" + name
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            switch st.st_mode & S_IFMT {
            case S_IFLNK: bind += ["--symlink", try FileManager.default.destinationOfSymbolicLink(atPath: path), path]
            case S_IFDIR: bind += ["--bind", path, path]
            default: continue
            }
        }
        return bind + ["--bind", "/proc", "/proc", "--dev-bind", "/dev", "/dev", "--ro-bind", info, "/.flatpak-info", "--", executable] + arguments
    }

    /// Runs `executable arguments` inside, with `environment`.
    @discardableResult
    func run(_ executable: String, _ arguments: [String], environment: [String: String], stdin: [UInt8]? = nil) throws -> RunResult {
        try KeybayTests.run("/usr/bin/bwrap", try self.arguments(executable, arguments), environment: environment, stdin: stdin)
    }
}
