// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A client of the agent at one socket: one request per connection, each round trip bounded
/// (the connect, then the request and its reply before a deadline), and only to an agent that
/// runs as this user. No agent, a stale socket, another user's listener or a silent one are
/// not errors here: the caller does what it does without an agent.
struct AgentClient: Sendable {
    let socketPath: String

    /// How long a connect may take (a full backlog).
    static let connectBound = 1.0
    /// How long a reply may take: the agent answers reads from memory after one stat.
    static let readBound = 1.0
    /// How long a write's reply may take: the agent waits for the store's lock, fsyncs and reads back.
    static let writeBound = 10.0

    /// How a round trip ended.
    enum Outcome {
        case reply(AgentReply)
        /// No whole request reached an agent: nothing was done.
        case unreachable(AgentSocket.Unreachable)
        /// The request was sent and no valid reply came in time (the agent ended, hung, or
        /// answered in another version): a write may or may not have been done.
        case unanswered(String)
    }

    func ask(_ request: AgentRequest) -> Outcome {
        let fd: Int32
        do { fd = try AgentSocket.connect(socketPath, timeout: Self.connectBound) } catch { return .unreachable(error) }
        defer { close(fd) }
        var frame = request.frame
        defer { Sodium.wipe(&frame) }
        let bound = request.writes ? Self.writeBound : Self.readBound
        let deadline = AgentSocket.monotonicNow() + bound
        guard AgentSocket.send(fd, frame, before: deadline) else { return .unreachable(.failed("send the request to", path: socketPath, errno: errno)) }
        guard var message = AgentSocket.receive(fd, before: deadline) else {
            return .unanswered("the agent at \(socketPath) gave no answer within \(Int(bound)) s")
        }
        defer { Sodium.wipe(&message) }
        do {
            let reply = try AgentReply.decode(message)
            if case .refused(let why) = reply { return .unanswered("the agent at \(socketPath) refused the request: \(why)") }
            return .reply(reply)
        } catch let e as KeybayError {
            return .unanswered("the agent at \(socketPath) answered what is no reply of this version (\(e.message))")
        } catch {
            return .unanswered("\(error)")
        }
    }

    /// Whether an agent of this user answers on the socket (it may hold nothing).
    var isRunning: Bool {
        if case .reply = ask(.query(AgentStoreRef(applicationID: "-", dataHome: "/", stateHome: "/"))) { return true }
        return false
    }

    /// The agent's hold on `store`: until when (Unix seconds, 0 until `lock`) and the store's
    /// root; nil when no agent answers or it does not hold the store.
    func holding(_ store: AgentStoreRef) -> (until: Int64, rootID: String)? {
        guard case .reply(.holding(let until, let rootID)) = ask(.query(store)) else { return nil }
        return (until, rootID)
    }

    /// Hands a store to the agent; returns until when it holds it (0: until `lock`).
    func hold(_ handoff: AgentHandoff) throws -> Int64 {
        switch ask(.hold(handoff)) {
        case .reply(.held(let until)): return until
        case .reply(.failed(let e)): throw e.with(path: handoff.store.storePath)
        case .reply(let other): throw KeybayError(.io, "the keybay agent at \(socketPath) answered a reply of type 0x\(String(other.type, radix: 16)) to unlock")
        case .unreachable(let why):
            throw KeybayError(.io, "cannot hand \(handoff.store.storePath) to the keybay agent: \(why.reason)").with(path: socketPath)
        case .unanswered(let why):
            throw KeybayError(.io, "cannot hand \(handoff.store.storePath) to the keybay agent: \(why)").with(path: socketPath)
        }
    }

    /// Makes the agent forget `store` (nil: every store); returns how many it forgot, nil when no
    /// agent answers (then it holds nothing either).
    func forget(_ store: AgentStoreRef?) -> UInt32? {
        guard case .reply(.forgotten(let count)) = ask(store.map { .forget($0) } ?? .forgetAll) else { return nil }
        return count
    }
}
