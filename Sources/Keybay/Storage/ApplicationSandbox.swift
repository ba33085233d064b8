// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The sandbox this process runs in, and the application id it attests: a Flatpak
/// (`/.flatpak-info`, its `[Application]` group's `name=`) or a snap (`SNAP_NAME` set, the
/// instance `SNAP_INSTANCE_NAME`). Inside one, a store's application id must be this one, so a
/// sandboxed app cannot name another app's store (docs/security.md, the portal root).
struct ApplicationSandbox: Sendable, Equatable {
    enum Kind: String, Sendable { case flatpak = "Flatpak", snap }

    let kind: Kind
    let applicationID: String

    static let flatpakInfo = "/.flatpak-info"

    /// The sandbox, nil outside one. A sandbox whose application id cannot be read is
    /// `.invalidArgument`: no store can be checked against it.
    static func current() throws -> ApplicationSandbox? {
        let fd = open(flatpakInfo, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while bytes.count < 65536 {
                let n = read(fd, &chunk, chunk.count)
                if n < 0 && errno == EINTR { continue }
                // A partial text is never taken for the whole: its name= may be cut.
                if n < 0 { throw KeybayError.posix("cannot read", flatpakInfo) }
                guard n > 0 else { break }
                bytes += chunk[0..<n]
            }
            guard let name = applicationName(inKeyFile: String(decoding: bytes, as: UTF8.self)) else {
                throw KeybayError(.invalidArgument, "\(flatpakInfo) names no application ([Application] name=): cannot tell this Flatpak sandbox's application id").with(path: flatpakInfo)
            }
            return ApplicationSandbox(kind: .flatpak, applicationID: name)
        }
        guard errno == ENOENT else { throw KeybayError.posix("cannot read", flatpakInfo) }
        guard let snap = getenv("SNAP_NAME"), snap.pointee != 0 else { return nil }
        guard let instance = getenv("SNAP_INSTANCE_NAME").map({ String(cString: $0) }), !instance.isEmpty else {
            throw KeybayError(.invalidArgument, "SNAP_NAME is set but SNAP_INSTANCE_NAME is not: cannot tell this snap's application id")
        }
        return ApplicationSandbox(kind: .snap, applicationID: instance)
    }

    /// The `name=` of the `[Application]` group of a key file.
    static func applicationName(inKeyFile text: String) -> String? {
        var group = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("[") { group = String(line) } else if group == "[Application]", line.hasPrefix("name=") {
                let name = String(line.dropFirst(5))
                return name.isEmpty ? nil : name
            }
        }
        return nil
    }
}
