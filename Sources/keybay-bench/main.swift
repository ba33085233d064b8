// keybay-bench: speed measured side by side in one run, as ratios (never timed assertions in
// tests). Build and run: swift run -c release keybay-bench
//
// Row so far: passphrase unlock (open a protected store with its passphrase method: load the
// plugin, Argon2id, derive the key pair, open the HPKE envelope, authenticate the manifest) vs
// the bare libargon2 call with the same parameters (64 MiB, t=4, p=2), alternating, median of N.
import CArgon2
import Glibc
import Keybay

struct FixedPassphrase: KeybayInteraction {
    let text: [UInt8]
    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        buffer.copyBytes(from: text)
        return text.count
    }
}

func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

func median(_ xs: [Double]) -> Double { let s = xs.sorted(); return s[s.count / 2] }

let runs = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 11
var template = Array("/tmp/keybay-bench-XXXXXX".utf8CString)
guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { fatalError("mkdtemp") }
let base = String(cString: made)
defer { _ = system("rm -rf '\(base)'") }

let passphrase = Array("correct horse battery staple".utf8)
let interaction = FixedPassphrase(text: passphrase)
let config = try KeybayConfiguration(applicationID: "bench", dataHome: base + "/data", stateHome: base + "/state")
let setup = try await KeybayStore.open(config, interaction: interaction)
try setup.set("service/token", string: "value")
let method = try await setup.auth.add(plugin: "passphrase", options: [("memory-kib", "65536"), ("iterations", "4"), ("lanes", "2")])
setup.close()

var ours: [Double] = [], bare: [Double] = []
var salt = [UInt8](repeating: 7, count: 16)
var out = [UInt8](repeating: 0, count: 32)
for _ in 0..<runs {
    var t0 = now()
    let session = try await KeybayStore.open(config, method: method.id, interaction: interaction)
    _ = try session.get("service/token")
    session.close()
    ours.append(now() - t0)

    t0 = now()
    let rc = argon2id_hash_raw(4, 65536, 2, passphrase, passphrase.count, &salt, salt.count, &out, out.count)
    precondition(rc == 0)
    bare.append(now() - t0)
}
let (o, b) = (median(ours), median(bare))
print("row                                              ours        reference   ratio")
print("passphrase unlock vs bare argon2id_hash_raw   \(format3(o * 1000)) ms   \(format3(b * 1000)) ms   \(format3(o / b))   (64 MiB, t=4, p=2; median of \(runs) alternating runs)")

func format3(_ x: Double) -> String {
    let scaled = (x * 1000).rounded() / 1000
    return String(scaled)
}
