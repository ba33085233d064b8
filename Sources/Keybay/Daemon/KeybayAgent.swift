// SPDX-License-Identifier: Apache-2.0
import CKeybayAgent
import Glibc

/// `keybay-methods agent`: the per-user agent that holds unlocked stores (docs/agent.md). It
/// makes itself undumpable, listens (AgentListener) and serves connections at once: its main
/// thread alone accepts, reads requests and writes replies, never blocking on a socket
/// (AgentConnection), and each whole request runs on a thread of its own (RequestWorkers), in
/// its store's turn (HeldStores). One request per connection, at most `maxConnections` open at
/// once; a client that sends nothing, or reads nothing, is dropped after `connectionBound` and
/// delays no other. It forgets stores as HeldStores says. It ends on SIGTERM, SIGINT or SIGHUP,
/// when its socket file is no longer in place (the runtime directory went at logout, or another
/// agent took over), and when it has held nothing and served nobody for `idleSeconds`; systemd's
/// socket starts it again on the next connection, `unlock` when it needs it.
package enum KeybayAgent {
    /// How long a connection may take to send its request, and then to take the reply.
    static let connectionBound = 1.0
    /// How many connections are open at once; more wait in the socket's backlog.
    static let maxConnections = 32
    /// How long the agent stays with nothing held.
    package static let idleSeconds = 60.0
    /// How long an ending agent waits for the requests in progress (a write's reply is bounded
    /// by 10 s on the client's side).
    static let drainSeconds = 15.0

    /// Runs the agent until it ends (then it has forgotten every store). `log` gets one line per
    /// event worth a journal entry (never a key, a value or a record key), from the main thread.
    ///
    /// - Throws: What keeps it from starting: `.invalidArgument` (no `XDG_RUNTIME_DIR`, a socket
    ///   systemd passed that is not the agent's), `.insecurePermissions` (a runtime directory
    ///   that is not this user's and private), `.io`. Another agent already listening is not an
    ///   error: it is logged and this one ends.
    package static func run(log: (String) -> Void) throws {
        guard keybay_make_undumpable() == 0 else {
            throw KeybayError(.io, "cannot make the agent undumpable (prctl PR_SET_DUMPABLE): \(String(cString: strerror(errno))); not starting")
        }
        guard keybay_catch_termination() == 0 else {
            throw KeybayError(.io, "cannot catch SIGTERM: \(String(cString: strerror(errno)))")
        }
        // A long-lived process keeps no directory busy (an unmount, a removed working directory);
        // every path it uses is absolute.
        _ = chdir("/")
        let listener: AgentListener
        do {
            listener = try AgentListener.open()
        } catch let already as AgentListener.AlreadyRunning {
            log("an agent already listens on \(already.path)")
            return
        }
        log("listening on \(listener.path)")
        let held = HeldStores()
        let workers: RequestWorkers
        do { workers = try RequestWorkers() } catch {
            listener.stop()
            throw error
        }
        var connections: [UInt64: AgentConnection] = [:]
        var nextID: UInt64 = 0
        var lastBusy = AgentSocket.monotonicNow(), lastSweep = 0.0
        while keybay_termination_signal() == 0 {
            let now = AgentSocket.monotonicNow()
            if now - lastSweep >= 1 {
                lastSweep = now
                held.sweep()
                guard listener.stillInPlace else {
                    log("\(listener.path) is gone or no longer this agent's socket; ending")
                    break
                }
            }
            if !held.isEmpty || !connections.isEmpty { lastBusy = now } else if now - lastBusy >= idleSeconds { break }
            startReplies(workers, &connections)
            for (id, c) in connections where c.deadline <= now { c.close(); connections[id] = nil }
            var wait = 1.0
            if let deadline = held.nextDeadline { wait = min(wait, deadline - HeldStores.bootNow()) }
            if let soonest = connections.values.map(\.deadline).min() { wait = min(wait, soonest - now) }
            let open = Array(connections.values)
            var polled = [pollfd(fd: workers.wakeup, events: Int16(POLLIN), revents: 0)]
                + open.map(\.pollEntry)
            if connections.count < maxConnections { polled.append(pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0)) }
            guard poll(&polled, nfds_t(polled.count), Int32(max(0.01, wait) * 1000) + 1) > 0 else { continue }
            for (c, p) in zip(open, polled.dropFirst()) where p.revents != 0 && !progress(c, held, workers, log: log) {
                c.close()
                connections[c.id] = nil
            }
            if polled.count > open.count + 1, polled.last!.revents & Int16(POLLIN) != 0,
               let fd = listener.accept(refused: { log("refused a connection from uid \($0): the agent serves uid \(geteuid()) only") }) {
                nextID += 1
                connections[nextID] = AgentConnection(id: nextID, fd: fd, deadline: AgentSocket.monotonicNow() + connectionBound)
            }
        }
        if !workers.waitUntilDone(seconds: drainSeconds) { log("ending with requests still in progress") }
        startReplies(workers, &connections)
        for c in connections.values {
            c.finishReply()
            c.close()
        }
        held.forgetAll()
        listener.stop()
    }

    /// Hands each finished reply to its connection to write (the connection is there: one whose
    /// request a worker has is never dropped).
    private static func startReplies(_ workers: RequestWorkers, _ connections: inout [UInt64: AgentConnection]) {
        for reply in workers.takeFinished() {
            connections[reply.id]?.startReply(reply.frame, before: AgentSocket.monotonicNow() + connectionBound)
        }
    }

    /// Reads what came of a request and starts its worker once it is whole; writes what the socket
    /// takes of a reply. False when the connection is done with (its reply sent) or failed.
    private static func progress(_ c: AgentConnection, _ held: HeldStores, _ workers: RequestWorkers, log: (String) -> Void) -> Bool {
        switch c.phase {
        case .receiving:
            switch c.receive() {
            case .more: return true
            case .failed: return false
            case .done:
                let request = RequestBytes(c.takeRequest())
                if workers.start(id: c.id, { answer(request, held) }) { return true }
                log("cannot start a thread for a request (\(String(cString: strerror(errno)))); closed its connection unanswered")
                var unused = request.take()
                Sodium.wipe(&unused)
                return false
            }
        case .working: return true
        case .sending: return c.send() == .more
        }
    }

    /// One request's reply frame; every buffer that held a value or a key is wiped but the frame
    /// (the connection wipes it once written).
    private static func answer(_ bytes: RequestBytes, _ held: HeldStores) -> [UInt8] {
        var message = bytes.take()
        defer { Sodium.wipe(&message) }
        var reply: AgentReply
        var request: AgentRequest?
        do {
            request = try AgentRequest.decode(message)
            reply = held.handle(request!)
        } catch let e as KeybayError {
            reply = .refused(e.message)
        } catch {
            reply = .refused("\(error)")
        }
        let frame = reply.frame
        reply.wipe()
        request?.wipe()
        return frame
    }
}

/// A request's bytes on their way to a worker: whoever takes them holds the only copy.
private final class RequestBytes: @unchecked Sendable {
    private var bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The bytes; called once, by one thread.
    func take() -> [UInt8] {
        defer { bytes = [] }
        return bytes
    }
}
