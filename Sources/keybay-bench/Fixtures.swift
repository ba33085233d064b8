// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

// What the rows share: a fixed passphrase, record names, files, and where programs are.

struct FixedPassphrase: KeybayInteraction {
    let text: [UInt8]
    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        buffer.copyBytes(from: text)
        return text.count
    }
}

func readAll(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var out: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 4096)
    while true { let n = read(fd, &chunk, chunk.count); if n <= 0 { break }; out += chunk[0..<n] }
    return out
}

func recordName(_ i: Int) -> String { "record/\(i < 10 ? "0" : "")\(i)" }

func which(_ name: String) -> String? {
    for dir in ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"] where access(dir + "/" + name, X_OK) == 0 { return dir + "/" + name }
    return nil
}

func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
    precondition(fd >= 0, "cannot write \(path)")
    bytes.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

let exeDirectory: String = {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let path = String(decoding: buffer[0..<max(0, n)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return String(path[..<path.lastIndex(of: "/")!])
}()
