// SPDX-License-Identifier: Apache-2.0
import CKeybayAgent
import Glibc

/// `keybay-methods agent`: the per-user agent that holds unlocked stores (docs/agent.md). It
/// makes itself undumpable, listens (AgentListener), answers one request per connection, in
/// turn, each connection bounded (a client that sends nothing, or reads nothing, is dropped after
/// `connectionBound`), and forgets stores as HeldStores says. It ends on SIGTERM, SIGINT or
/// SIGHUP, when its socket file is no longer in place (the runtime directory went at logout, or
/// another agent took over), and when it has held nothing for `idleSeconds`; systemd's socket
/// starts it again on the next connection, `unlock` when it needs it.
package enum KeybayAgent {
    /// How long a connection may take to send its request, and then to take the reply.
    static let connectionBound = 1.0
    /// How long the agent stays with nothing held.
    package static let idleSeconds = 60.0

    /// Runs the agent until it ends (then it has forgotten every store). `log` gets one line per
    /// event worth a journal entry (never a key, a value or a record key).
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
        var lastHeld = AgentSocket.monotonicNow(), lastSweep = 0.0
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
            if !held.isEmpty { lastHeld = now } else if now - lastHeld >= idleSeconds { break }
            var wait = 1.0
            if let deadline = held.nextDeadline { wait = max(0.01, min(wait, deadline - HeldStores.bootNow())) }
            var p = pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(wait * 1000) + 1) > 0, p.revents & Int16(POLLIN) != 0 else { continue }
            guard let connection = listener.accept(refused: { log("refused a connection from uid \($0): the agent serves uid \(geteuid()) only") }) else {
                continue
            }
            serve(connection, held)
            close(connection)
        }
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

extension AgentReply {
    /// Wipes the values it carries (each buffer is then its only holder, so the wipe is in place).
    mutating func wipe() {
        switch self {
        case .value(var value?):
            self = .done
            Sodium.wipe(&value)
        case .values(var values):
            self = .done
            for i in values.indices where values[i] != nil {
                var value = values[i]!
                values[i] = nil
                Sodium.wipe(&value)
            }
        default: break
        }
    }
}

extension AgentRequest {
    /// Wipes the value a `set` carries.
    mutating func wipe() {
        guard case .set(_, _, var value) = self else { return }
        self = .forgetAll
        Sodium.wipe(&value)
    }
}
