// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Unix stream sockets named by a path: their address, and a connect bounded by a timeout (the
/// agent's client, and the host's connect_socket for a plugin).
enum UnixSocket {
    /// `sockaddr_un` for `path`, or nil when the path does not fit in `sun_path`.
    static func address(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return address
    }

    static func withAddress<R>(_ address: sockaddr_un, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = address
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// Why a connect failed: the path does not fit a socket address, or a call failed (what was
    /// tried, "make a socket for" or "connect to", and its errno).
    enum Failure: Error {
        case tooLong
        case failed(String, errno: Int32)
    }

    /// A stream socket (close-on-exec) connected to `path`, whoever listens there; the connect
    /// is bounded by `timeout`, which stays set as the socket's send and receive timeouts.
    static func connect(_ path: String, timeout: Double) throws(Failure) -> Int32 {
        guard let address = address(path) else { throw .tooLong }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .failed("make a socket for", errno: errno) }
        var bound = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, socklen_t(MemoryLayout<timeval>.size))
        var connected: Int32 = -1
        repeat { connected = withAddress(address) { Glibc.connect(fd, $0, $1) } } while connected != 0 && errno == EINTR
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw .failed("connect to", errno: code)
        }
        return fd
    }
}
