// SPDX-License-Identifier: Apache-2.0
import Glibc
import Synchronization

/// The stores the agent holds unlocked: for each, the record source on the held engine (the
/// keys it was handed, no root, no method), until when, its root's id, and its turns. A store is
/// forgotten when its time is up, on `lock`, and as soon as its live file is not the one it
/// holds (another process wrote it, a rotation gave it a new epoch, a copy was put back, it was
/// removed): checked on every request and once a second. Forgetting closes the source, which
/// drops the keys (guarded memory, wiped when freed) once no request is using them.
///
/// Requests run at once, each on a thread of its own: the table is behind a lock taken only to
/// look up, add or remove a hold; a request on a store runs in its turn (`ArrivalOrder`).
final class HeldStores: Sendable {
    private final class Held: Sendable {
        let records: LocalRecords
        /// CLOCK_BOOTTIME seconds (counting suspend) when it is forgotten; nil: on `lock` only.
        let deadline: Double?
        /// The same moment in Unix seconds, for `status`; 0 when there is none.
        let until: Int64
        let rootID: String
        let turns = ArrivalOrder()

        init(records: LocalRecords, deadline: Double?, until: Int64, rootID: String) {
            (self.records, self.deadline, self.until, self.rootID) = (records, deadline, until, rootID)
        }

        var expired: Bool { deadline.map { HeldStores.bootNow() >= $0 } ?? false }
    }

    private let held = Mutex<[AgentStoreRef: Held]>([:])

    var isEmpty: Bool { held.withLock { $0.isEmpty } }

    /// Seconds since boot, suspend included: a time limit also runs while the machine sleeps.
    static func bootNow() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_BOOTTIME, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// The earliest deadline, for the agent's wait.
    var nextDeadline: Double? { held.withLock { $0.values.compactMap(\.deadline).min() } }

    func handle(_ request: AgentRequest) -> AgentReply {
        switch request {
        case .hold(let handoff): return hold(handoff)
        case .forget(let store): return .forgotten(count: forget(store) ? 1 : 0)
        case .forgetAll: return .forgotten(count: forgetAll())
        case .query(let store): return inTurn(store) { .holding(until: $0.until, rootID: $0.rootID) }
        case .record(let store, let call): return inTurn(store) { .answer(try call.perform(on: $0.records)) }
        }
    }

    /// Forgets what is past its time and what no longer has its file in place. It never waits
    /// for a store that is serving a request (that request checks the file itself).
    func sweep() {
        for (store, h) in held.withLock({ $0 }) where h.expired || h.records.holdsLiveFileIfIdle == false {
            forget(store, only: h)
        }
    }

    /// Forgets every store; how many there were.
    @discardableResult
    func forgetAll() -> UInt32 {
        let all = held.withLock { held in
            defer { held = [:] }
            return held
        }
        for h in all.values { h.records.close() }
        return UInt32(all.count)
    }

    private func hold(_ handoff: AgentHandoff) -> AgentReply {
        forget(handoff.store)
        do {
            let settings = try Self.settings(handoff.store, rootID: handoff.rootID)
            let engine = StoreEngine(holding: settings, rootID: handoff.rootID, domain: handoff.domain)
            let (file, generation) = try engine.adopt(keys: handoff.keys, identity: handoff.identity)
            let records = LocalRecords(OpenGeneration(engine: engine.withoutRead, file: file, generation: generation))
            let seconds = handoff.seconds
            let until = seconds == 0 ? 0 : Int64(time(nil)) + Int64(clamping: seconds)
            let h = Held(records: records, deadline: seconds == 0 ? nil : Self.bootNow() + Double(seconds), until: until, rootID: handoff.rootID)
            // Another `unlock` of the same store may have landed meanwhile: the later one holds it.
            held.withLock { $0.updateValue(h, forKey: handoff.store) }?.records.close()
            return .held(until: until)
        } catch let e as KeybayError {
            return .failed(e)
        } catch {
            return .failed(KeybayError(.io, "\(error)"))
        }
    }

    /// The held store's settings, its names checked as a configuration checks them.
    private static func settings(_ store: AgentStoreRef, rootID: String) throws -> StoreSettings {
        _ = try StoreLocation.checkApplicationID(store.applicationID)
        let dataHome = try StoreLocation.baseDirectory(explicit: store.dataHome, variable: "XDG_DATA_HOME", fallback: ".local/share")
        let stateHome = try StoreLocation.baseDirectory(explicit: store.stateHome, variable: "XDG_STATE_HOME", fallback: ".local/state")
        return StoreSettings(holding: StoreLocation(dataHome: dataHome, applicationID: store.applicationID), stateHome: stateHome, rootID: rootID)
    }

    @discardableResult
    private func forget(_ store: AgentStoreRef) -> Bool {
        guard let h = held.withLock({ $0.removeValue(forKey: store) }) else { return false }
        h.records.close()
        return true
    }

    /// Forgets `store` if `h` is still its hold (not one a later `unlock` put in its place).
    private func forget(_ store: AgentStoreRef, only h: Held) {
        let removed = held.withLock { held -> Bool in
            guard held[store] === h else { return false }
            held[store] = nil
            return true
        }
        if removed { h.records.close() }
    }

    /// A request on a live hold, in its store's turn. A failure that says the file is not the
    /// one held (or gone, or unreadable) ends the hold: the client then asks as it would without
    /// the agent. Other failures (a key too long, a full store, an I/O error) are the client's
    /// to report.
    private func inTurn(_ store: AgentStoreRef, _ body: (Held) throws -> AgentReply) -> AgentReply {
        guard let h = held.withLock({ $0[store] }) else { return .notHeld }
        return h.turns.inTurn {
            guard !h.expired, h.records.holdsLiveFile else {
                forget(store, only: h)
                return .notHeld
            }
            do {
                return try body(h)
            } catch let e as KeybayError where Self.endsHold.contains(e.code) {
                forget(store, only: h)
                return .notHeld
            } catch let e as KeybayError {
                return .failed(e)
            } catch {
                forget(store, only: h)
                return .notHeld
            }
        }
    }

    private static let endsHold: Set<KeybayError.Code> = [.keyChanged, .storeNotFound, .integrity, .malformed, .unsupported, .rolledBack,
                                                         .platformKeyInvalidated, .closed, .authenticationRequired, .protectionMismatch,
                                                         .rootUnavailable, .insecurePermissions]
}
