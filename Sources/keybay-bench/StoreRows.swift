// SPDX-License-Identifier: Apache-2.0
import CArgon2
import CSodium
import Glibc
import Keybay

// The rows on the store itself: CLI get against age, the passphrase unlock against Argon2id
// and cryptsetup, a durable set, opening a large store (and the CLI's peak RSS on it), the
// in-process calls, and loading the plugins.

/// 1. CLI get vs age -d of 64 KiB.
@MainActor func benchGet() throws {
    let s = try KeybayStore.open(config("get64"))
    for i in 0..<64 { try s.set(recordName(i), bytes: [UInt8](repeating: UInt8(i), count: 1024)) }
    s.close()
    if let age = which("age"), let keygen = which("age-keygen") {
        _ = system("'\(keygen)' -o '\(base)/age.key' 2>/dev/null; head -c 65536 /dev/urandom > '\(base)/plain'; '\(age)' -e -i '\(base)/age.key' -o '\(base)/blob.age' '\(base)/plain' 2>/dev/null || '\(age)' -e -r \"$(grep -o 'age1[0-9a-z]*' '\(base)/age.key')\" -o '\(base)/blob.age' '\(base)/plain'")
        let m = alternate(runs, ours: [cli, "--app", "get64", "get", "record/42"],
                          reference: [age, "-d", "-i", base + "/age.key", base + "/blob.age"], env: env)
        reportTimes("CLI get (64 x 1 KiB store) vs age -d (64 KiB)", m.ours, m.reference, target: "<= 1.0")
    } else {
        print("  (age not installed: run scripts/bench.sh)")
    }
}

/// 2. Passphrase unlock (CLI verify) vs cryptsetup open --test-passphrase, Argon2id 64 MiB, t=4, p=2.
@MainActor func benchVerify() throws {
    let passphrase = Array("correct horse battery staple".utf8)
    writeFile(base + "/pass", passphrase)
    let setup = try KeybayStore.open(config("pass"), interaction: FixedPassphrase(text: passphrase))
    try setup.set("service/token", string: "value")
    _ = try setup.auth.add(plugin: "passphrase", options: [("memory-kib", "65536"), ("iterations", "4"), ("lanes", "2")])
    setup.close()
    var inProcess: [Double] = [], bare: [Double] = []
    let method = try KeybayStore.status(config("pass")).methods[0].id
    var salt = [UInt8](repeating: 7, count: 16), out = [UInt8](repeating: 0, count: 32)
    for _ in 0..<max(5, runs / 2) {
        var t0 = now()
        let session = try KeybayStore.open(config("pass"), method: method, interaction: FixedPassphrase(text: passphrase))
        _ = try session.get("service/token")
        session.close()
        inProcess.append(now() - t0)
        t0 = now()
        precondition(argon2id_hash_raw(4, 65536, 2, passphrase, passphrase.count, &salt, salt.count, &out, out.count) == 0)
        bare.append(now() - t0)
    }
    reportTimes("passphrase unlock in-process vs bare argon2id_hash_raw (64 MiB, t=4, p=2)", median(inProcess), median(bare),
                target: "<= 1.05", digits: 3)

    if let cryptsetup = which("cryptsetup") {
        let image = base + "/luks.img"
        _ = system("truncate -s 20M '\(image)' && '\(cryptsetup)' luksFormat -q --type luks2 --pbkdf argon2id --pbkdf-memory 65536 --pbkdf-force-iterations 4 --pbkdf-parallel 2 --key-file '\(base)/pass' '\(image)' >/dev/null 2>&1")
        let m = alternate(max(5, runs / 2), ours: [cli, "--app", "pass", "verify", "--passphrase-fd", "0"],
                          reference: [cryptsetup, "open", "--test-passphrase", "--key-file", base + "/pass", image],
                          env: env, stdin: base + "/pass")
        reportTimes("CLI verify vs cryptsetup open --test-passphrase (LUKS2, same Argon2id)", m.ours, m.reference, target: "<= 1.05")
    } else {
        print("  (cryptsetup not installed: run scripts/bench.sh)")
    }
}

/// 3. Durable set into 4096 x 1 KiB vs writing, fsyncing and renaming the same bytes + directory fsync.
@MainActor func benchSet() throws {
    let s = try KeybayStore.open(config("durable"))
    for i in 0..<4096 { try s.set("r/\(i)", bytes: [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 1024)) }
    let storeFile = base + "/data/keybay/durable/keybay.v2.store"
    var st = stat()
    stat(storeFile, &st)
    let size = Int(st.st_size)
    let bytes = [UInt8](repeating: 0x5a, count: size)
    let dir = base + "/bare"
    mkdir(dir, 0o700)
    var ours: [Double] = [], ref: [Double] = []
    for i in 0..<runs {
        var t0 = now()
        try s.set("r/\(i % 4096)", bytes: [UInt8](repeating: UInt8(truncatingIfNeeded: i + 1), count: 1024))
        ours.append(now() - t0)
        t0 = now()
        let fd = open(dir + "/stage", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        bytes.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        rename(dir + "/stage", dir + "/live")
        let d = open(dir, O_RDONLY | O_DIRECTORY)
        fsync(d)
        close(d)
        ref.append(now() - t0)
    }
    s.close()
    reportTimes("durable set (4096 x 1 KiB, \(size / 1024) KiB file) vs bare write+fsync+rename+dir fsync", median(ours), median(ref), target: "<= 2.0")
}

/// 4. Opening a 16 MiB store (decrypt and authenticate everything) vs raw XChaCha20-Poly1305.
@MainActor func benchOpen() throws {
    let s = try KeybayStore.open(config("big"))
    let value = [UInt8](repeating: 0x33, count: 1024 * 1024 - 4096)
    for i in 0..<15 { try s.set("big/\(i)", bytes: value) }
    let keys = try s.keys()
    s.close()
    let total = keys.count * value.count
    // The reference: libsodium decrypting the same number of frames of the same size.
    let key = [UInt8](repeating: 1, count: 32), nonce = [UInt8](repeating: 2, count: 24)
    var sealed = [UInt8](repeating: 0, count: value.count + 16)
    var clen: UInt64 = 0
    crypto_aead_xchacha20poly1305_ietf_encrypt(&sealed, &clen, value, UInt64(value.count), nil, 0, nil, nonce, key)
    var plain = [UInt8](repeating: 0, count: value.count)
    var ours: [Double] = [], ref: [Double] = []
    for _ in 0..<max(5, runs / 2) {
        var t0 = now()
        let session = try KeybayStore.open(config("big"), createIfAbsent: false)
        let all = try session.getMany(keys)
        precondition(all.count == keys.count)
        session.close()
        ours.append(now() - t0)
        t0 = now()
        for _ in keys {
            var mlen: UInt64 = 0
            precondition(crypto_aead_xchacha20poly1305_ietf_decrypt(&plain, &mlen, nil, sealed, UInt64(sealed.count), nil, 0, nonce, key) == 0)
        }
        ref.append(now() - t0)
    }
    let mib = Double(total) / 1048576
    report(Row(name: "open + read all of a \(Int(mib)) MiB store vs raw libsodium decryption (throughput)",
               ours: fixed(mib / median(ours), 0) + " MiB/s", reference: fixed(mib / median(ref), 0) + " MiB/s",
               ratio: fixed(median(ref) / median(ours)), target: ">= 0.6"))

    // 7. Peak RSS of CLI get on that store. Measured by GNU time (it forks from a small
    // process): a child posix_spawn'ed from this large process would count our pages too.
    _ = spawnTimed(["/usr/bin/time", "-f", "%M", "-o", base + "/rss", cli, "--app", "big", "get", "big/3"], env: env)
    let rssKiB = Int(String(decoding: readAll(base + "/rss"), as: UTF8.self).split(separator: "\n").last.map(String.init) ?? "") ?? -1
    var st = stat()
    stat(base + "/data/keybay/big/keybay.v2.store", &st)
    let storeMiB = Double(st.st_size) / 1048576
    report(Row(name: "peak RSS of CLI get on a \(fixed(storeMiB, 1)) MiB store", ours: "\(rssKiB / 1024) MiB",
               reference: "\(fixed(2 * storeMiB + 16, 0)) MiB (2 x store + 16 MiB)", ratio: fixed(Double(rssKiB) / 1024 / (2 * storeMiB + 16)), target: "<= 1.0"))
}

/// 5. In-process get and getMany.
@MainActor func benchInProcess() throws {
    let s = try KeybayStore.open(config("inproc"))
    var names: [String] = []
    for i in 0..<1024 { names.append("k/\(i)"); try s.set("k/\(i)", bytes: [UInt8](repeating: 1, count: 64)) }
    let n = 20_000
    var t0 = now()
    for i in 0..<n { _ = try s.get(names[i % 1024]) }
    let perGet = (now() - t0) / Double(n)
    t0 = now()
    for _ in 0..<20 { _ = try s.getMany(names) }
    let perMany = (now() - t0) / 20
    s.close()
    report(Row(name: "in-process get (64-byte value, 1024 records)", ours: fixed(perGet * 1e9, 0) + " ns/call", reference: "-", ratio: "-", target: "-"))
    report(Row(name: "in-process getMany of 1024 keys", ours: fixed(perMany * 1e6, 0) + " µs", reference: "-", ratio: "-", target: "-"))
}

/// 6. Plugin discovery + loading of the first-party plugins, in a fresh process each time.
@MainActor func benchPluginLoading() {
    var times: [Double] = []
    for _ in 0..<max(5, runs / 2) {
        let p = popen("'\(exeDirectory)/keybay-bench' load-plugins", "r")!
        var line = [CChar](repeating: 0, count: 256)
        _ = fgets(&line, 256, p)
        pclose(p)
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        times.append(Double(text.split(separator: " ").first ?? "0") ?? 0)
    }
    report(Row(name: "plugin discovery + loading of file-root, passphrase, fido2 (fresh process)", ours: fixed(median(times)) + " ms", reference: "-", ratio: "-", target: "<= 2 ms"))
}
