// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The pkcs11 rows: CLI get on a store a pkcs11 method protects (an RSA-2048 key on a SoftHSM2
/// token made here, in the bench's own directory) against pkcs11-tool decrypting with the same key
/// on the same token: both load the module, log in with the PIN and decrypt once (SoftHSM 2.6
/// takes OAEP with SHA-1 only, so both decrypt raw RSA: docs/pkcs11.md). One row with the module
/// named, one through p11-kit's list (pkcs11-tool through p11-kit's proxy module).
@MainActor func benchPkcs11(runs: Int, base: String, env: [String: String], cli: String) {
    let module = "/usr/lib/softhsm/libsofthsm2.so", proxy = "/usr/lib/x86_64-linux-gnu/p11-kit-proxy.so"
    guard let util = which("softhsm2-util"), let tool = which("pkcs11-tool"), let openssl = which("openssl"),
          access(module, R_OK) == 0 else {
        print("  (softhsm2, opensc or openssl not installed: run scripts/bench.sh)")
        return
    }
    let dir = base + "/softhsm"
    mkdir(dir, 0o700)
    mkdir(dir + "/tokens", 0o700)
    writeFile(dir + "/softhsm2.conf", Array("directories.tokendir = \(dir)/tokens\nlog.level = ERROR\n".utf8))
    writeFile(dir + "/pin", Array("1234\n".utf8))
    var tokenEnv = env
    tokenEnv["SOFTHSM2_CONF"] = dir + "/softhsm2.conf"
    tokenEnv["XDG_CONFIG_HOME"] = base + "/config"
    let made = "export SOFTHSM2_CONF='\(dir)/softhsm2.conf'; cd '\(dir)' && '\(util)' --init-token --free --label kb --pin 1234 --so-pin 5678 >/dev/null && " +
        "'\(tool)' --module '\(module)' --token-label kb --login --pin 1234 --keypairgen --key-type rsa:2048 --id 01 --label k >/dev/null 2>&1 && " +
        "'\(tool)' --module '\(module)' --token-label kb --read-object --type pubkey --id 01 -o pub.der >/dev/null 2>&1 && " +
        "head -c 32 /dev/urandom > m && '\(openssl)' pkeyutl -encrypt -pubin -keyform DER -inkey pub.der -pkeyopt rsa_padding_mode:oaep " +
        "-pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256 -in m -out c"
    precondition(system(made) == 0, "could not make the SoftHSM2 token, its key and a ciphertext")
    let reference = { (m: String) in [tool, "--module", m, "--token-label", "kb", "--login", "--pin", "1234", "--decrypt", "--id", "01",
                                      "-m", "RSA-X-509", "-i", dir + "/c"] }
    for (app, option, referenceModule, name) in [("pkcs11mod", ["--opt", "module=" + module], module, "module named"),
                                                 ("pkcs11kit", [], proxy, "p11-kit's list; pkcs11-tool through p11-kit-proxy.so")] {
        precondition(spawnTimed([cli, "--app", app, "set", "k", "v"], env: tokenEnv).status == 0, "set failed")
        let enrolled = spawnTimed([cli, "--app", app, "enroll", "pkcs11", "--opt", "token=pkcs11:token=kb;id=%01", "--pin-fd", "0"] + option,
                                  env: tokenEnv, stdin: dir + "/pin")
        precondition(enrolled.status == 0, "enroll pkcs11 failed")
        let m = alternate(runs, ours: [cli, "--app", app, "get", "k", "--pin-fd", "0"], reference: reference(referenceModule),
                          env: tokenEnv, stdin: dir + "/pin")
        reportTimes("CLI get (pkcs11, RSA-2048, SoftHSM2, \(name)) vs pkcs11-tool --decrypt (same key, same token)", m.ours, m.reference, target: "<= 1.0")
    }
}
