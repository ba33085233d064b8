// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// SoftHSM2 tokens in a directory of the test's own (SOFTHSM2_CONF names its configuration),
/// made with softhsm2-util and given keys with pkcs11-tool: never the user's tokens. The module
/// is reached through p11-kit's list (Debian's softhsm2 registers it there) or named directly.
/// A tool that is missing or fails throws: the test fails, it never skips.
struct SoftHSMTokens {
    static let module = "/usr/lib/softhsm/libsofthsm2.so"
    static let pin = "1234"
    static let soPIN = "5678"

    let directory: String
    var configuration: String { directory + "/softhsm2.conf" }

    struct ToolFailed: Error, CustomStringConvertible {
        let description: String
    }

    /// A token directory under `root`, with a configuration naming it.
    init(under root: String) throws {
        directory = root + "/softhsm"
        for dir in [directory, directory + "/tokens"] where mkdir(dir, 0o700) != 0 {
            throw ToolFailed(description: "mkdir \(dir): \(String(cString: strerror(errno)))")
        }
        try "directories.tokendir = \(directory)/tokens\nobjectstore.backend = file\nlog.level = ERROR\n"
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        for tool in ["/usr/bin/softhsm2-util", "/usr/bin/pkcs11-tool", Self.module] where access(tool, R_OK) != 0 {
            throw ToolFailed(description: "\(tool) is missing: scripts/setup.sh installs softhsm2 and opensc")
        }
    }

    /// What a child needs to see these tokens and no others: SoftHSM's configuration, and p11-kit's
    /// user configuration in the sandbox (p11-kit reads none as root; the system list names softhsm2).
    func environment(_ base: [String: String], root: String) -> [String: String] {
        var env = base
        env["SOFTHSM2_CONF"] = configuration
        env["XDG_CONFIG_HOME"] = root + "/config"
        return env
    }

    func initToken(_ label: String) throws {
        try tool("/usr/bin/softhsm2-util", ["--init-token", "--free", "--label", label, "--pin", Self.pin, "--so-pin", Self.soPIN])
    }

    /// A key pair on the token `label`: keyType "rsa:2048" or "EC:prime256v1", id in hex ("01").
    func generate(on label: String, keyType: String, id: String) throws {
        try tool("/usr/bin/pkcs11-tool", ["--module", Self.module, "--token-label", label, "--login", "--pin", Self.pin,
                                          "--keypairgen", "--key-type", keyType, "--id", id, "--label", "key-\(id)"])
    }

    func deleteToken(_ label: String) throws {
        try tool("/usr/bin/softhsm2-util", ["--delete-token", "--token", label])
    }

    private func tool(_ path: String, _ arguments: [String]) throws {
        let r = try run(path, arguments, environment: ["SOFTHSM2_CONF": configuration, "PATH": "/usr/bin:/bin"])
        guard r.status == 0 else {
            throw ToolFailed(description: "\(path) \(arguments.prefix(2).joined(separator: " ")) exited \(r.status): \(r.out)\(r.stderr)")
        }
    }
}
