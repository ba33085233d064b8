import Foundation
import Glibc
import Testing

/// The third-party C example (Examples/c-plugin) built out of tree against the installed header
/// and keybay-plugin.pc only, then loaded by the CLI with --plugin-dir.
@Suite struct ExamplePluginTests {
    /// Runs the CLI with `pin` on descriptor 3 as `--pin-fd 3`.
    static func cli(_ box: Sandbox, _ args: [String], pin: String) throws -> RunResult {
        try box.cli(args, secret: pin, option: "--pin-fd")
    }

    @Test func cPluginBuiltFromTheInstalledHeaderEnrollsAndUnlocks() throws {
        let box = Sandbox()
        // Header and .pc only (`make install-dev`), no Swift build.
        let prefix = box.root + "/prefix"
        let installed = try run("/usr/bin/make", ["-s", "-C", packageDirectory, "install-dev", "PREFIX=" + prefix], environment: box.environment)
        #expect(installed.status == 0, "\(installed.stderr)")
        #expect(exists(prefix + "/include/keybay/keybay_plugin.h"))
        let pc = String(decoding: readBytes(prefix + "/lib/pkgconfig/keybay-plugin.pc") ?? [], as: UTF8.self)
        #expect(pc.contains("prefix=" + prefix + "\n") && pc.contains("Cflags: -I${includedir}/keybay"), "\(pc)")

        // A copy of the example's sources, built with nothing but that prefix.
        let dir = box.root + "/c-plugin"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        chmod(dir, 0o700)
        for name in ["pin.c", "Makefile"] {
            try FileManager.default.copyItem(atPath: packageDirectory + "/Examples/c-plugin/" + name, toPath: dir + "/" + name)
        }
        var env = box.environment
        env["PKG_CONFIG_PATH"] = prefix + "/lib/pkgconfig"
        let built = try run("/usr/bin/make", ["-s", "-C", dir], environment: env)
        #expect(built.status == 0, "\(built.stderr)")
        try #require(exists(dir + "/libkeybay-com.example.pin.so"))

        let conformance = try run(cliPath, ["plugin-check", dir + "/libkeybay-com.example.pin.so"], environment: box.environment)
        #expect(conformance.status == 0 && conformance.out.contains(" 0 failed"), "\(conformance.out)")
        let listed = try run(cliPath, ["plugins", "--plugin-dir", dir], environment: box.environment)
        #expect(listed.out.contains("com.example.pin  method  1.0  available  " + dir + "/libkeybay-com.example.pin.so"), "\(listed.out)\(listed.stderr)")

        let enrolled = try Self.cli(box, ["enroll", "com.example.pin", "--json", "--plugin-dir", dir], pin: "482916")
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        #expect(enrolled.out.contains("\"plugin\":\"com.example.pin\""), "\(enrolled.out)")
        #expect(try box.cli("status", "--json").out.contains("\"state\":\"protected\""))

        let set = try Self.cli(box, ["set", "service/token", "correct horse", "--plugin-dir", dir], pin: "482916")
        #expect(set.status == 0, "\(set.stderr)")

        let right = try Self.cli(box, ["get", "service/token", "--plugin-dir", dir], pin: "482916")
        #expect(right.status == 0 && right.out == "correct horse", "\(right.stderr)")

        let wrong = try Self.cli(box, ["get", "service/token", "--plugin-dir", dir], pin: "482917")
        #expect(wrong.status == 1 && wrong.stdout.isEmpty && wrong.stderr.contains("wrong-secret"), "\(wrong.status) \(wrong.stderr)")
        #expect(!wrong.stderr.contains("48291"), "the PIN leaked into an error")

        let noInput = try run(cliPath, ["get", "service/token", "--no-input", "--plugin-dir", dir], environment: box.environment)
        #expect(noInput.status == 4 && noInput.stdout.isEmpty, "\(noInput.status) \(noInput.stderr)")

        // The plugin's own option check: it takes none.
        let option = try Self.cli(box, ["enroll", "com.example.pin", "--opt", "digits=8", "--plugin-dir", dir], pin: "482916")
        #expect(option.status == 2 && option.stderr.contains("unknown option 'digits'"), "\(option.status) \(option.stderr)")
    }
}
