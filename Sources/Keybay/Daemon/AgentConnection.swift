// SPDX-License-Identifier: Apache-2.0
import Glibc

/// One client connection as the agent's main thread serves it: the request read in pieces as
/// they come (never blocking), then a worker's turn, then the reply written in pieces, the
/// reading and the writing each before its deadline. The main thread alone reads and writes
/// sockets, so a client that stalls costs nothing but its own descriptor; the buffers that held
/// the request or the reply are wiped when the connection is closed.
final class AgentConnection {
    enum Phase { case receiving, working, sending }
    /// How reading or writing went this time.
    enum Progress { case more, done, failed }

    let id: UInt64
    let fd: Int32
    private(set) var phase = Phase.receiving
    /// When the phase under way must be over (none while a worker has the request).
    private(set) var deadline: Double
    private var header = [UInt8](repeating: 0, count: 4)
    private var headerFilled = 0
    private var message: [UInt8] = []
    private var done = 0
    private var reply: [UInt8] = []

    init(id: UInt64, fd: Int32, deadline: Double) {
        (self.id, self.fd, self.deadline) = (id, fd, deadline)
    }

    /// Reads what has come of the request: `done` once all of it is here, `failed` when the peer
    /// closed or declared a length of 0 or over `AgentFrame.maxLength`.
    func receive() -> Progress {
        while headerFilled < 4 {
            let n = header.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + headerFilled, 4 - headerFilled, Int32(MSG_DONTWAIT)) }
            guard n > 0 else { return n < 0 && (errno == EAGAIN || errno == EINTR) ? .more : .failed }
            headerFilled += n
            if headerFilled == 4 {
                let length = header.reduce(0) { $0 << 8 | Int($1) }
                guard length > 0, length <= AgentFrame.maxLength else { return .failed }
                message = [UInt8](repeating: 0, count: length)
            }
        }
        while done < message.count {
            let n = message.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + done, $0.count - done, Int32(MSG_DONTWAIT)) }
            guard n > 0 else { return n < 0 && (errno == EAGAIN || errno == EINTR) ? .more : .failed }
            done += n
        }
        return .done
    }

    /// The whole request (what followed its length field), for a worker; this connection keeps no copy.
    func takeRequest() -> [UInt8] {
        phase = .working
        deadline = .infinity
        defer { message = [] }
        return message
    }

    /// Starts writing `frame`, which it wipes when closed.
    func startReply(_ frame: [UInt8], before deadline: Double) {
        (phase, self.deadline, reply, done) = (.sending, deadline, frame, 0)
    }

    /// Writes what the socket takes of the reply: `done` once all of it is sent.
    func send() -> Progress {
        while done < reply.count {
            let n = reply.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + done, $0.count - done, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            guard n > 0 else { return n < 0 && (errno == EAGAIN || errno == EINTR) ? .more : .failed }
            done += n
        }
        return .done
    }

    /// Writes the rest of the reply, waiting for the socket until its deadline (the agent is
    /// ending: a request it did is still answered).
    func finishReply() {
        while phase == .sending, send() == .more, AgentSocket.monotonicNow() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, 10)
        }
    }

    /// What to poll it for: reading, or writing; nothing while a worker has the request (fd -1,
    /// which poll skips: a client that hung up meanwhile would be reported at once, over and over).
    var pollEntry: pollfd {
        switch phase {
        case .receiving: pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        case .working: pollfd(fd: -1, events: 0, revents: 0)
        case .sending: pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        }
    }

    func close() {
        Sodium.wipe(&message)
        Sodium.wipe(&reply)
        Glibc.close(fd)
    }
}
