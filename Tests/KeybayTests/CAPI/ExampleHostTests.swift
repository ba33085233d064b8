// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// Examples/c-host (built with pkg-config) and Examples/rust-host (its `extern "C"` written by
/// hand, built by `cargo build --offline`) against the prefix CAPITests installs, run with no
/// LD_LIBRARY_PATH: `enroll` asks for the passphrase twice and prints the recovery key; `open`
/// lists both methods, takes the number typed, asks with the chosen method's label and id, and
/// prints the record; a wrong passphrase is asked again with is_retry; `open --no-choice` exits 2
/// listing both methods from keybay_error_methods.
@Suite struct ExampleHostTests {
    /// The Rust host: the example copied into the prefix (cargo writes beside its manifest) and
    /// built there offline, finding libkeybay through the prefix's keybay.pc.
    static func rustHost(_ prefix: String) throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"] ?? NSHomeDirectory()
        let searched = (environment["PATH"] ?? "").split(separator: ":").map(String.init) + [home + "/.cargo/bin", "/usr/bin"]
        guard let cargo = searched.map({ $0 + "/cargo" }).first(where: { access($0, X_OK) == 0 }) else {
            throw KeybayTestFailure("cargo is not installed (searched \(searched.joined(separator: ":"))): the Rust example cannot be built")
        }
        let source = prefix + "/rust-host"
        try? FileManager.default.removeItem(atPath: source)
        try FileManager.default.copyItem(atPath: packageDirectory + "/Examples/rust-host", toPath: source)
        var build = ["PATH": (cargo as NSString).deletingLastPathComponent + ":/usr/bin:/bin", "HOME": home,
                     "CARGO_HOME": prefix + "/cargo-home", "CARGO_TARGET_DIR": prefix + "/rust-target",
                     "PKG_CONFIG_PATH": prefix + "/lib/pkgconfig"]
        // rustup's proxy finds its toolchains here (CARGO_HOME is the test's own, so nothing is written outside it).
        build["RUSTUP_HOME"] = environment["RUSTUP_HOME"] ?? home + "/.rustup"
        build["RUSTUP_TOOLCHAIN"] = environment["RUSTUP_TOOLCHAIN"]
        let r = try run(cargo, ["build", "--offline", "--locked", "--quiet", "--manifest-path", source + "/Cargo.toml"], environment: build)
        guard r.status == 0 else { throw KeybayTestFailure("cargo build: \(r.stderr)") }
        return prefix + "/rust-target/debug/host"
    }

    static func host(_ language: String, _ prefix: String) throws -> String {
        language == "c" ? try CAPITests.built(prefix, as: "c-host", from: "host.c", in: "Examples/c-host") : try rustHost(prefix)
    }

    @Test(arguments: ["c", "rust"])
    func theExampleHostEnrollsChoosesAMethodAndListsThemWhenItCannotChoose(_ language: String) throws {
        let prefix = try CAPITests.installed.get()
        let program = try Self.host(language, prefix)
        let box = Sandbox(app: "com.example.\(language)-example")
        var environment = box.environment
        environment["KEYBAY_PLUGIN_PATH"] = nil // the installed library finds the installed plugins
        let ldd = try run("/usr/bin/ldd", [program], environment: ["PATH": "/usr/bin:/bin"])
        #expect(ldd.out.contains(prefix + "/lib/libkeybay.so.1"), "\(ldd.out)")

        // enroll: the passphrase asked twice (new, then confirm), the recovery key on stdout.
        let enroll = try run(program, ["enroll", box.app], environment: environment, stdin: Array("pw\npw\n".utf8))
        #expect(enroll.status == 0, "\(enroll.out) \(enroll.stderr)")
        // Each ask's context line follows the previous prompt on stderr (the answer came from a pipe, not echoed).
        let asks = enroll.stderr.components(separatedBy: "ask: ").dropFirst().map { "ask: " + $0 }
        #expect(asks.count == 2 && asks[0].hasPrefix("ask: kind=new-secret secret_kind=passphrase label=\"Passphrase\" method_id=(none) plugin=passphrase app=\(box.app) ")
                && asks[1].hasPrefix("ask: kind=confirm-new-secret "), "\(asks)")
        let printed = enroll.out.split(separator: "\n").map(String.init)
        let key = try #require(printed.count == 1 ? printed[0].components(separatedBy: "recovery key: ").last : nil, "\(enroll.out)")
        #expect(printed[0] == "recovery key: " + key && key.count == 62, "\(enroll.out)")
        let ids = try methodIDs(box)
        try #require(ids.count == 2, "\(ids)")

        // open, choosing 2 (the recovery key): its label and id in the ask, the record printed.
        let open = try run(program, ["open", box.app], environment: environment, stdin: Array("2\n\(key)\n".utf8))
        #expect(open.status == 0 && open.out == "greeting: hello from keybay\n", "\(open.out) \(open.stderr)")
        #expect(open.stderr.contains("  1) \"Passphrase\" plugin=passphrase id=\(ids[0]) needs_device=0\n  2) \"Paper key\" plugin=recovery id=\(ids[1]) needs_device=0\n"),
                "\(open.stderr)")
        #expect(open.stderr.contains("ask: kind=secret secret_kind=recovery key label=\"Paper key\" method_id=\(ids[1]) plugin=recovery app=\(box.app) tries_left=-1 is_retry=0\n"),
                "\(open.stderr)")

        // choosing 1 with a wrong passphrase first: asked again, marked as a retry.
        let retried = try run(program, ["open", box.app], environment: environment, stdin: Array("1\nwrong\npw\n".utf8))
        #expect(retried.status == 0 && retried.out == "greeting: hello from keybay\n", "\(retried.out) \(retried.stderr)")
        #expect(retried.stderr.contains("label=\"Passphrase\" method_id=\(ids[0]) plugin=passphrase app=\(box.app) tries_left=2 is_retry=1\n"), "\(retried.stderr)")

        // no chooser: authentication-required, exit 2, both methods from keybay_error_methods.
        let refused = try run(program, ["open", box.app, "--no-choice"], environment: environment, stdin: Array("2\n\(key)\n".utf8))
        #expect(refused.status == 2 && refused.out.isEmpty, "\(refused.status) \(refused.out) \(refused.stderr)")
        #expect(refused.stderr.contains("[authentication-required]; name one of:\n  1) \"Passphrase\" plugin=passphrase id=\(ids[0]) needs_device=0\n  2) \"Paper key\" plugin=recovery id=\(ids[1]) needs_device=0\n"),
                "\(refused.stderr)")
        #expect(!refused.stderr.contains("ask: "), "\(refused.stderr)")

        // A usage error is 64, a failed Keybay call 1 (a choice the host refuses: cancelled).
        #expect(try run(program, ["enroll"], environment: environment).status == 64)
        let cancelled = try run(program, ["open", box.app], environment: environment, stdin: Array("3\n".utf8))
        #expect(cancelled.status == 1 && cancelled.stderr.hasSuffix("[cancelled]\n"), "\(cancelled.stderr)")
    }
}
