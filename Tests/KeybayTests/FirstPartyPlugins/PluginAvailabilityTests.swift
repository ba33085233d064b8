// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// `keybay-methods plugins` tells the truth about the roots (docs/cli.md, "plugins"): a root
/// whose device or service is absent is "not available" with the reason, as a method is, and
/// what it calls available can be used. The probes reach no device or service the user did not
/// name and answer quickly.
@Suite struct PluginAvailabilityTests {
    /// `plugins --json` as `[id: (available, reason)]`, run within `limit` seconds.
    static func listed(_ env: [String: String], limit: Double = 20) throws -> [String: (available: Bool, reason: String)] {
        let (r, seconds) = try Tpm2BoundsTests.runWithin(limit, cliPath, ["plugins", "--json", "--no-input"], environment: env)
        #expect(r.status == 0 && !r.signalled, "plugins: \(r.status) \(r.stderr)")
        #expect(seconds < 10, "plugins took \(seconds) s")
        guard let entries = try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [[String: Any]] else {
            throw KeybayTestFailure("plugins --json is not a list: \(r.out)")
        }
        var out: [String: (available: Bool, reason: String)] = [:]
        for entry in entries {
            guard let id = entry["id"] as? String, let available = entry["available"] as? Bool else { continue }
            out[id] = (available, entry["reason"] as? String ?? "")
        }
        return out
    }

    /// No TPM device and no KEYBAY_TPM2_TCTI, no session bus, no sandbox: tpm2 (the root) and
    /// tpm2-pin say "no TPM", secret-service no session bus, portal no sandbox; file-root is
    /// available. What is called unavailable is: `init --root tpm2` is root-unavailable.
    @Test(.enabled(if: !exists("/dev/tpmrm0") && !exists("/dev/tpm0"), "this machine has a TPM device"))
    func rootsWithoutTheirDeviceOrServiceAreNotAvailable() throws {
        let box = Sandbox()
        var env = box.environment
        for name in ["KEYBAY_TPM2_TCTI", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "SNAP_NAME"] { env[name] = nil }
        let plugins = try Self.listed(env)
        for id in ["tpm2", "tpm2-pin"] {
            #expect(plugins[id]?.available == false && plugins[id]?.reason.contains("no TPM") == true, "\(id): \(String(describing: plugins[id]))")
        }
        #expect(plugins["secret-service"]?.available == false && plugins["secret-service"]?.reason.contains("no session bus") == true,
                "\(String(describing: plugins["secret-service"]))")
        #expect(plugins["portal"]?.available == false && plugins["portal"]?.reason.contains("not inside a sandbox") == true,
                "\(String(describing: plugins["portal"]))")
        #expect(plugins["file-root"]?.available == true)
        let text = try run(cliPath, ["plugins"], environment: env)
        #expect(text.out.split(separator: "\n").contains { $0.hasPrefix("tpm2  root ") && $0.contains("not available") }, "\(text.out)")
        let r = try run(cliPath, ["init", "--root", "tpm2", "--json"], environment: env)
        #expect(r.status == 1 && r.error?.code == "root-unavailable" && r.error?.reason == "no-tpm", "\(r.status): \(r.out)")
        // A device named in the variable that is not there, and a TCTI the root refuses, the same.
        env["KEYBAY_TPM2_TCTI"] = "device:\(box.root)/no-tpm"
        #expect(try Self.listed(env)["tpm2"].map { !$0.available && $0.reason.contains("\(box.root)/no-tpm") } == true)
        env["KEYBAY_TPM2_TCTI"] = "libtss2-tcti-evil.so"
        #expect(try Self.listed(env)["tpm2"].map { !$0.available && $0.reason.contains("KEYBAY_TPM2_TCTI") } == true)
    }

    /// A swtpm named through KEYBAY_TPM2_TCTI: the tpm2 root is available, the listing reached
    /// nothing in it (no NV index, no object), and `init --root tpm2` then works.
    @Test func aTPMNamedInTheVariableIsAvailableAndTheListingLeavesItAlone() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        var env = box.environment
        env["KEYBAY_TPM2_TCTI"] = tpm.tcti
        let plugins = try Self.listed(env)
        #expect(plugins["tpm2"]?.available == true && plugins["tpm2-pin"]?.available == true, "\(plugins)")
        #expect(try tpm.handles("handles-nv-index").isEmpty && tpm.handles("handles-transient").isEmpty)
        let r = try run(cliPath, ["init", "--root", "tpm2"], environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try tpm.handles("handles-nv-index").count == 1)
    }
}
