// SPDX-License-Identifier: Apache-2.0
import CKeybayAgent
import Glibc

/// `keybay-methods agent`: the per-user agent that holds unlocked stores (docs/agent.md). It
/// makes itself undumpable, listens (AgentListener), and serves connections at once, each on a
/// thread of its own (ConnectionThreads, a bounded number), one request per connection, each
/// connection bounded (a client that sends nothing, or reads nothing, is dropped after
/// `connectionBound` and delays no other); requests on one store run in arrival order
/// (HeldStores). It forgets stores as HeldStores says. It ends on SIGTERM, SIGINT or SIGHUP, when
/// its socket file is no longer in place (the runtime directory went at logout, or another agent
/// took over), and when it has held nothing and served nobody for `idleSeconds`; systemd's socket
/// starts it again on the next connection, `unlock` when it needs it.
package enum KeybayAgent {
    /// How long a connection may take to send its request, and then to take the reply.
    static let connectionBound = 1.0
    /// How long the agent stays with nothing held.
    package static let idleSeconds = 60.0
    /// How long an ending agent waits for the requests in progress (a write's reply is bounded
    /// by 10 s on the client's side).
    static let drainSeconds = 15.0

    /// Runs the agent until it ends (then it has forgotten every store). `log` gets one line per
    /// event worth a journal entry (never a key, a value or a record key), from the agent's main thread.
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
        let connections = ConnectionThreads()
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
            if !held.isEmpty || connections.count > 0 { lastBusy = now } else if now - lastBusy >= idleSeconds { break }
            guard connections.hasRoom else {
                usleep(10_000)
                continue
            }
            var wait = 1.0
            if let deadline = held.nextDeadline { wait = max(0.01, min(wait, deadline - HeldStores.bootNow())) }
            var p = pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(wait * 1000) + 1) > 0, p.revents & Int16(POLLIN) != 0 else { continue }
            guard let connection = listener.accept(refused: { log("refused a connection from uid \($0): the agent serves uid \(geteuid()) only") }) else {
                continue
            }
            let started = connections.start {
                serve(connection, held)
                close(connection)
            }
            if !started {
                log("cannot start a thread for a connection (\(String(cString: strerror(errno)))); closed it unanswered")
                close(connection)
            }
        }
        if !connections.waitUntilDone(seconds: drainSeconds) { log("ending with requests still in progress") }
        held.forgetAll()
        listener.stop()
    }

    /// One request and its reply; every buffer that held a value or a key is wiped.
    private static func serve(_ connection: Int32, _ held: HeldStores) {
        guard var message = AgentSocket.receive(connection, before: AgentSocket.monotonicNow() + connectionBound) else { return }
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
        var frame = reply.frame
        defer { Sodium.wipe(&frame) }
        reply.wipe()
        request?.wipe()
        _ = AgentSocket.send(connection, frame, before: AgentSocket.monotonicNow() + connectionBound)
    }
}
