// SPDX-License-Identifier: Apache-2.0
import CKeybayAgent
import Glibc

/// The agent's Unix stream socket, on both sides: connecting (bounded, and only to an agent of
/// this user), and sending and receiving whole frames before a deadline (poll, never a blocking
/// read without one), so a silent or slow peer costs at most the bound.
enum AgentSocket {
    /// Seconds on the monotonic clock.
    static func monotonicNow() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Why a connection to the agent was not made: the caller goes on without one. The text is
    /// made only when someone reads it (a command without an agent never formats it).
    enum Unreachable: Error {
        case tooLong(String)
        case failed(String, path: String, errno: Int32)
        case otherUser(path: String, uid: uid_t)

        var reason: String {
            switch self {
            case .tooLong(let path): "\(path) is too long for a socket address"
            case .failed(let what, let path, let code): "cannot \(what) \(path): \(String(cString: strerror(code)))"
            case .otherUser(let path, let uid): "the process listening on \(path) runs as uid \(uid), not as this user (uid \(geteuid())); not using it"
            }
        }
    }

    /// A connected socket to the agent at `path`, whose peer (the process that listens) runs as
    /// this user; the connect itself is bounded by `timeout` (SO_SNDTIMEO applies to it).
    static func connect(_ path: String, timeout: Double) throws(Unreachable) -> Int32 {
        let fd: Int32
        do throws(UnixSocket.Failure) {
            fd = try UnixSocket.connect(path, timeout: timeout)
        } catch {
            switch error {
            case .tooLong: throw .tooLong(path)
            case .failed(let what, let code): throw .failed(what, path: path, errno: code)
            }
        }
        var uid: uid_t = 0, pid: pid_t = 0
        guard keybay_peer_credentials(fd, &uid, &pid) == 0, uid == geteuid() else {
            close(fd)
            throw .otherUser(path: path, uid: uid)
        }
        return fd
    }

    /// Writes all of `bytes` before `deadline`; false when the peer went away or was too slow.
    static func send(_ fd: Int32, _ bytes: [UInt8], before deadline: Double) -> Bool {
        var done = 0
        while done < bytes.count {
            guard wait(fd, for: Int16(POLLOUT), before: deadline) else { return false }
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + done, $0.count - done, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    /// One message (what follows its length field) read before `deadline`, or nil: the peer
    /// closed, was too slow, or declared a length of 0 or over `AgentFrame.maxLength`.
    static func receive(_ fd: Int32, before deadline: Double) -> [UInt8]? {
        var header = [UInt8](repeating: 0, count: 4)
        guard read(fd, into: &header, before: deadline) else { return nil }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length > 0, length <= AgentFrame.maxLength else { return nil }
        var message = [UInt8](repeating: 0, count: length)
        guard read(fd, into: &message, before: deadline) else {
            Sodium.wipe(&message)
            return nil
        }
        return message
    }

    private static func read(_ fd: Int32, into buffer: inout [UInt8], before deadline: Double) -> Bool {
        var done = 0
        while done < buffer.count {
            guard wait(fd, for: Int16(POLLIN), before: deadline) else { return false }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + done, $0.count - done, Int32(MSG_DONTWAIT)) }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    /// Whether `fd` is ready for `events` before `deadline`.
    private static func wait(_ fd: Int32, for events: Int16, before deadline: Double) -> Bool {
        while true {
            let left = deadline - monotonicNow()
            guard left > 0 else { return false }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let n = poll(&p, 1, Int32(min(left * 1000 + 1, 60_000)))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { if n == 0 { continue }; return false }
            return p.revents & (events | Int16(POLLHUP) | Int16(POLLERR)) != 0
        }
    }
}
