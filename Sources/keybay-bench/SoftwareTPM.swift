// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A loopback port P with P and P+1 free now (swtpm's command and control ports).
func freeLoopbackPort() -> UInt16 {
    func bound(_ port: UInt16) -> (Int32, UInt16)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 } }
        guard ok else { close(fd); return nil }
        return (fd, UInt16(bigEndian: a.sin_port))
    }
    for _ in 0..<50 {
        guard let (fd, port) = bound(0) else { continue }
        defer { close(fd) }
        if port < 65535, let (next, _) = bound(port + 1) { close(next); return port }
    }
    fatalError("no free loopback port pair")
}

/// Starts a throwaway swtpm (state in `directory`, on a free loopback port pair, as a daemon)
/// and returns its TCTI configuration; `stopSoftwareTPM(directory)` kills it.
func startSoftwareTPM(_ swtpm: String, in directory: String) -> String {
    let port = freeLoopbackPort()
    mkdir(directory, 0o700)
    precondition(system("'\(swtpm)' socket --tpmstate dir='\(directory)' --tpm2 --server type=tcp,port=\(port),bindaddr=127.0.0.1 --ctrl type=tcp,port=\(port + 1),bindaddr=127.0.0.1 --flags not-need-init,startup-clear --daemon --pid file='\(directory)/pid'") == 0, "swtpm did not start")
    return "swtpm:host=127.0.0.1,port=\(port)"
}

func stopSoftwareTPM(_ directory: String) { _ = system("kill -9 $(cat '\(directory)/pid')") }

/// A row's swtpm: started in `base/name`, with `env` for tpm2-tools and Keybay on it (its TCTI,
/// quiet TSS logs, and `root` as KEYBAY_ROOT when given); `stopSoftwareTPM(state)` kills it.
@MainActor func softwareTPMForRow(_ swtpm: String, named name: String, root: String? = nil) -> (state: String, tcti: String, env: [String: String]) {
    let state = base + "/" + name
    let tcti = startSoftwareTPM(swtpm, in: state)
    var tpmEnv = env
    for (k, v) in [("TPM2TOOLS_TCTI", tcti), ("KEYBAY_TPM2_TCTI", tcti), ("TSS2_LOG", "all+none")] { tpmEnv[k] = v }
    if let root { tpmEnv["KEYBAY_ROOT"] = root }
    return (state, tcti, tpmEnv)
}
