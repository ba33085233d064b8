// SPDX-License-Identifier: Apache-2.0
import CSodium
import Glibc
import Keybay

/// One Assuan conversation with a pinentry program, the line protocol pinentry speaks on its
/// standard input and output: the program is started with one end of a socket pair as both
/// (its standard error on /dev/null, every other descriptor closed), commands go out
/// percent-escaped, and each answer must come within a deadline. The lines received are held in
/// guarded memory, and data lines (`D`, the secret) are decoded from there straight into the
/// caller's buffer: the secret is never in a `String`, an argument or the environment.
final class AssuanChannel {
    /// How an answer ended: `OK`, or `ERR` with libgpg-error's code and the program's text.
    enum Reply {
        case ok
        case err(code: UInt32, text: String)
    }

    let program: String
    private let pid: pid_t
    private let socket: Int32
    /// Bytes received and not yet taken (guarded memory: they may hold a data line).
    private let received: UnsafeMutablePointer<UInt8>
    private var receivedCount = 0
    private var ended = false
    /// Assuan's longest line is 1000 bytes; an answer line longer than this is refused.
    static let capacity = 4096
    static let maxLineBytes = 1000

    /// Starts `program` (an absolute path) with no arguments and the process's environment.
    init(program: String) throws {
        self.program = program
        // The line buffers below are sodium_malloc'ed.
        precondition(sodium_init() >= 0, "libsodium failed to initialise")
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw KeybayError(.interactionRequired, "cannot start the pinentry program \(program): \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pair[1], 0)
        posix_spawn_file_actions_adddup2(&actions, pair[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else of this process reaches the pinentry: not a --passphrase-fd, not a store file.
        if let closeFrom = Self.closeFrom { _ = closeFrom(&actions, 3) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t(), defaults = sigset_t()
        sigemptyset(&noSignals)
        sigemptyset(&defaults)
        for s in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(program), nil]
        defer { free(argv[0]) }
        let status = posix_spawn(&child, program, &actions, &attributes, argv, environ)
        close(pair[1])
        guard status == 0 else {
            close(pair[0])
            throw KeybayError(.interactionRequired, "cannot start the pinentry program \(program): \(String(cString: strerror(status)))")
        }
        pid = child
        socket = pair[0]
        received = sodium_malloc(Self.capacity)!.assumingMemoryBound(to: UInt8.self)
    }

    deinit {
        end()
        sodium_free(received) // wipes first
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32)? = {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
            .map { unsafeBitCast($0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32).self) }
    }()

    /// Reads the greeting (`OK …`) within `seconds`.
    func greeting(within seconds: Int) throws {
        if case .err(let code, let text) = try answer(by: Self.deadline(seconds), seconds: seconds, data: nil).reply {
            throw KeybayError(.interactionRequired, "the pinentry program \(program) refused to start: \(text) (\(code))")
        }
    }

    /// Sends `command` with `argument` percent-escaped, and reads its answer within `seconds`;
    /// data lines are decoded into `data` (refused when there is none), their byte count returned.
    func transact(_ command: String, _ argument: String? = nil, within seconds: Int,
                  data: UnsafeMutableRawBufferPointer? = nil) throws -> (reply: Reply, count: Int) {
        // One deadline for the command and its answer: a program that stops reading holds the
        // send no longer than one that stops answering holds the read.
        let deadline = Self.deadline(seconds)
        try send(Self.line(command, argument), by: deadline, seconds: seconds)
        return try answer(by: deadline, seconds: seconds, data: data)
    }

    /// `BYE`, the socket closed, and the program waited for (a second at most, then killed).
    func end() {
        guard !ended else { return }
        ended = true
        _ = try? send(Array("BYE\n".utf8), by: Self.deadline(1), seconds: 1)
        close(socket)
        for _ in 0..<100 {
            var status: Int32 = 0
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid || (r < 0 && errno != EINTR) { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    /// `command`, a space and `argument` escaped as Assuan wants (`%`, CR, LF and every other
    /// control character, and `\`, as `%XX`), and the newline; cut at a character so the line
    /// stays within Assuan's 1000 bytes.
    static func line(_ command: String, _ argument: String?) -> [UInt8] {
        var out = Array(command.utf8)
        if let argument {
            out.append(0x20)
            for scalar in argument.unicodeScalars {
                var piece: [UInt8] = []
                for b in String(scalar).utf8 {
                    if b < 0x20 || b == 0x7f || b == 0x25 || b == 0x5c {
                        let hex = Array("0123456789ABCDEF".utf8)
                        piece += [0x25, hex[Int(b >> 4)], hex[Int(b & 0xf)]]
                    } else {
                        piece.append(b)
                    }
                }
                guard out.count + piece.count < maxLineBytes else { break }
                out += piece
            }
        }
        return out + [0x0a]
    }

    /// Sends `bytes` by `deadline`; a program that has stopped reading is killed then (`.timedOut`).
    private func send(_ bytes: [UInt8], by deadline: UInt64, seconds: Int) throws {
        var done = 0
        while done < bytes.count {
            guard try ready(for: POLLOUT, by: deadline, seconds: seconds, late: "read nothing") else { continue }
            let n = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard n > 0 else { throw KeybayError(.interactionRequired, "the pinentry program \(program) ended without answering") }
            done += n
        }
    }

    /// Lines up to `OK` or `ERR`: `D` lines decoded into `data`, status (`S`) and comment (`#`)
    /// lines skipped, an `INQUIRE` (pinentry asks nothing of us) answered with `CAN`.
    private func answer(by deadline: UInt64, seconds: Int, data: UnsafeMutableRawBufferPointer?) throws -> (reply: Reply, count: Int) {
        var count = 0
        do {
            while true {
                let reply = try nextLine(by: deadline, seconds: seconds) { line -> Reply? in
                    if line.starts(with: [0x44, 0x20]) { // "D "
                        guard let data else { throw protocolError("data where none was asked for") }
                        count = try Self.decode(line.dropFirst(2), into: data, at: count, program: program)
                        return nil
                    }
                    let text = String(decoding: line, as: UTF8.self)
                    if text == "OK" || text.hasPrefix("OK ") { return .ok }
                    if text.hasPrefix("ERR ") {
                        let fields = text.dropFirst(4).split(separator: " ", maxSplits: 1)
                        guard let code = fields.first.flatMap({ UInt32($0) }) else { throw protocolError("an ERR line without a code") }
                        return .err(code: code, text: fields.count > 1 ? String(fields[1]) : "")
                    }
                    if text.hasPrefix("S ") || text.hasPrefix("#") { return nil }
                    if text.hasPrefix("INQUIRE ") { try send(Array("CAN\n".utf8), by: deadline, seconds: seconds); return nil }
                    throw protocolError("a line that is not Assuan")
                }
                if let reply {
                    if case .err = reply, let data { sodium_memzero(data.baseAddress!, count) }
                    return (reply, count)
                }
            }
        } catch {
            // An answer cut short (too long, malformed, late) leaves nothing of itself behind.
            if let data, data.count > 0 { sodium_memzero(data.baseAddress!, data.count) }
            throw error
        }
    }

    /// Percent-decodes `escaped` into `data` from `offset`; the new length.
    private static func decode(_ escaped: Slice<UnsafeRawBufferPointer>, into data: UnsafeMutableRawBufferPointer, at offset: Int,
                               program: String) throws -> Int {
        func nibble(_ c: UInt8) -> UInt8? {
            switch c { case 0x30...0x39: c - 0x30; case 0x41...0x46: c - 0x41 + 10; case 0x61...0x66: c - 0x61 + 10; default: nil }
        }
        var n = offset
        var i = escaped.startIndex
        while i < escaped.endIndex {
            var byte = escaped[i]
            if byte == 0x25 {
                guard i + 2 < escaped.endIndex, let hi = nibble(escaped[i + 1]), let lo = nibble(escaped[i + 2]) else {
                    throw KeybayError(.interactionRequired, "the pinentry program \(program) sent a malformed escape")
                }
                byte = hi << 4 | lo
                i += 2
            }
            guard n < data.count else { throw KeybayError(.invalidArgument, "the entry is longer than the \(data.count) bytes the method takes") }
            data[n] = byte
            n += 1
            i += 1
        }
        return n
    }

    /// Hands the next line (without its newline) to `body`, reading until one is complete or the
    /// deadline passes (then the program is killed: `.timedOut`). The line's bytes are wiped.
    private func nextLine<R>(by deadline: UInt64, seconds: Int, _ body: (Slice<UnsafeRawBufferPointer>) throws -> R) throws -> R {
        while true {
            let buffer = UnsafeRawBufferPointer(start: received, count: receivedCount)
            if let newline = buffer.firstIndex(of: 0x0a) {
                defer {
                    let rest = receivedCount - newline - 1
                    memmove(received, received + newline + 1, rest)
                    sodium_memzero(received + rest, receivedCount - rest)
                    receivedCount = rest
                }
                guard newline <= Self.maxLineBytes else { throw protocolError("a line longer than Assuan allows") }
                let end = newline > 0 && buffer[newline - 1] == 0x0d ? newline - 1 : newline
                return try body(buffer[0..<end])
            }
            guard receivedCount < Self.capacity else { throw protocolError("a line longer than Assuan allows") }
            guard try ready(for: POLLIN, by: deadline, seconds: seconds, late: "gave no answer") else { continue }
            let n = recv(socket, received + receivedCount, Self.capacity - receivedCount, 0)
            if n < 0 { if errno == EINTR { continue }; throw protocolError(String(cString: strerror(errno))) }
            guard n > 0 else { throw KeybayError(.interactionRequired, "the pinentry program \(program) ended without answering") }
            receivedCount += n
        }
    }

    /// Whether the socket became ready for `events` (`POLLIN`, `POLLOUT`) within one slice of the
    /// wait; past `deadline` the program is killed (`.timedOut`, saying it `late`).
    private func ready(for events: Int32, by deadline: UInt64, seconds: Int, late: String) throws -> Bool {
        let now = Self.monotonicNanoseconds()
        guard now < deadline else {
            kill(pid, SIGKILL)
            throw KeybayError(.timedOut, "the pinentry program \(program) \(late) within \(seconds) s")
        }
        var poller = pollfd(fd: socket, events: Int16(events), revents: 0)
        let ready = poll(&poller, 1, Int32(min((deadline - now) / 1_000_000 + 1, 60_000)))
        if ready < 0 && errno != EINTR { throw protocolError(String(cString: strerror(errno))) }
        return ready > 0
    }

    private func protocolError(_ what: String) -> KeybayError {
        KeybayError(.interactionRequired, "the pinentry program \(program) broke the Assuan protocol: \(what)")
    }

    private static func deadline(_ seconds: Int) -> UInt64 { monotonicNanoseconds() + UInt64(seconds) * 1_000_000_000 }

    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
