// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The stores the agent holds unlocked: for each, a session on the held engine (the keys it was
/// handed, no root, no method), until when, and its root's id. A store is forgotten when its
/// time is up, on `lock`, and as soon as its live file is not the one the session holds (another
/// process wrote it, a rotation gave it a new epoch, a copy was put back, it was removed):
/// checked on every request and once a second. Forgetting closes the session, which frees and
/// wipes the keys (guarded memory).
final class HeldStores {
    private struct Held {
        let session: KeybaySession
        /// CLOCK_BOOTTIME seconds (counting suspend) when it is forgotten; nil: on `lock` only.
        let deadline: Double?
        /// The same moment in Unix seconds, for `status`; 0 when there is none.
        let until: Int64
        let rootID: String
    }

    private var held: [AgentStoreRef: Held] = [:]

    var isEmpty: Bool { held.isEmpty }

    /// Seconds since boot, suspend included: a time limit also runs while the machine sleeps.
    static func bootNow() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_BOOTTIME, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// The earliest deadline, for the agent's wait.
    var nextDeadline: Double? { held.values.compactMap(\.deadline).min() }

    func handle(_ request: AgentRequest) -> AgentReply {
        switch request {
        case .hold(let handoff): return hold(handoff)
        case .forget(let store): return .forgotten(count: forget(store) ? 1 : 0)
        case .forgetAll:
            let count = UInt32(held.count)
            forgetAll()
            return .forgotten(count: count)
        case .query(let store):
            guard let h = live(store) else { return .notHeld }
            return .holding(until: h.until, rootID: h.rootID)
        case .get(let store, let key): return serve(store) { .value(try $0.get(key)) }
        case .getMany(let store, let keys):
            return serve(store) { session in
                let found = try session.getMany(keys)
                return .values(keys.map { found[$0] })
            }
        case .keys(let store): return serve(store) { .keyList(try $0.keys()) }
        case .contains(let store, let key): return serve(store) { .bool(try $0.contains(key)) }
        case .set(let store, let key, let value): return serve(store) { try $0.set(key, bytes: value); return .done }
        case .delete(let store, let key): return serve(store) { .bool(try $0.delete(key)) }
        case .clearAll(let store): return serve(store) { try $0.clearAll(); return .done }
        }
    }

    /// Forgets what is past its time and what no longer has its file in place.
    func sweep() {
        for (store, h) in held where expired(h) || !h.session.holdsLiveFile { forget(store) }
    }

    func forgetAll() {
        for store in Array(held.keys) { forget(store) }
    }

    private func hold(_ handoff: AgentHandoff) -> AgentReply {
        forget(handoff.store)
        do {
            var configuration = try KeybayConfiguration(applicationID: handoff.store.applicationID, dataHome: handoff.store.dataHome,
                                                        stateHome: handoff.store.stateHome)
            configuration.agentSocket = nil
            let engine = StoreEngine(holding: configuration.settings, rootID: handoff.rootID, domain: handoff.domain)
            let (file, generation) = try engine.adopt(keys: handoff.keys, identity: handoff.identity)
            let session = KeybaySession(configuration, engine: engine, file: file, generation: generation, interaction: NonInteractive())
            let seconds = handoff.seconds
            let until = seconds == 0 ? 0 : Int64(time(nil)) + Int64(clamping: seconds)
            held[handoff.store] = Held(session: session, deadline: seconds == 0 ? nil : Self.bootNow() + Double(seconds), until: until,
                                       rootID: handoff.rootID)
            return .held(until: until)
        } catch let e as KeybayError {
            return .failed(e)
        } catch {
            return .failed(KeybayError(.io, "\(error)"))
        }
    }

    @discardableResult
    private func forget(_ store: AgentStoreRef) -> Bool {
        guard let h = held.removeValue(forKey: store) else { return false }
        h.session.close()
        return true
    }

    private func expired(_ h: Held) -> Bool {
        h.deadline.map { Self.bootNow() >= $0 } ?? false
    }

    /// The hold on `store`, unless it is over now.
    private func live(_ store: AgentStoreRef) -> Held? {
        guard let h = held[store] else { return nil }
        if expired(h) || !h.session.holdsLiveFile {
            forget(store)
            return nil
        }
        return h
    }

    /// A record operation on a live hold. A failure that says the file is not the one held (or
    /// gone, or unreadable) ends the hold: the client then asks as it would without the agent.
    /// Other failures (a key too long, a full store, an I/O error) are the client's to report.
    private func serve(_ store: AgentStoreRef, _ body: (KeybaySession) throws -> AgentReply) -> AgentReply {
        guard let h = live(store) else { return .notHeld }
        do {
            return try body(h.session)
        } catch let e as KeybayError where Self.endsHold.contains(e.code) {
            forget(store)
            return .notHeld
        } catch let e as KeybayError {
            return .failed(e)
        } catch {
            forget(store)
            return .notHeld
        }
    }

    private static let endsHold: Set<KeybayError.Code> = [.keyChanged, .storeNotFound, .integrity, .malformed, .unsupported, .rolledBack,
                                                         .platformKeyInvalidated, .closed, .authenticationRequired, .protectionMismatch,
                                                         .rootUnavailable, .insecurePermissions]
}
