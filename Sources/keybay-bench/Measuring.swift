// SPDX-License-Identifier: Apache-2.0
import Glibc

// Timing: processes spawned and timed, medians of alternating runs, and the rows they make.

func now() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

func median(_ xs: [Double]) -> Double { let s = xs.sorted(); return s[s.count / 2] }

func fixed(_ x: Double, _ digits: Int = 2) -> String {
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let r = (x * p).rounded() / p
    var s = String(r)
    if let dot = s.firstIndex(of: ".") {
        let decimals = s.distance(from: dot, to: s.endIndex) - 1
        if decimals < digits { s += String(repeating: "0", count: digits - decimals) }
    }
    return s
}

/// Runs a program (stdout to /dev/null, optional stdin file) and returns (seconds, peak RSS KiB, exit status).
func spawnTimed(_ argv: [String], env: [String: String], stdin: String? = nil) -> (seconds: Double, maxRSSKiB: Int, status: Int32) {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    let cArgs = argv.map { strdup($0) } + [nil]
    let cEnv = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (cArgs + cEnv).forEach { free($0) } }
    var pid: pid_t = 0
    let t0 = now()
    guard posix_spawn(&pid, argv[0], &actions, nil, cArgs, cEnv) == 0 else { fatalError("cannot run \(argv[0])") }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
    return (now() - t0, usage.ru_maxrss, (status >> 8) & 0xff)
}

struct Row {
    let name: String
    let ours: String
    let reference: String
    let ratio: String
    let target: String
}

/// Alternates two commands `count` times; returns the median seconds of each. The reference
/// runs with `referenceEnv` when given.
func alternate(_ count: Int, ours: [String], reference: [String], env: [String: String], referenceEnv: [String: String]? = nil,
               stdin: String? = nil) -> (ours: Double, reference: Double) {
    alternate(count, ours: ours, referenceSteps: [reference], env: env, referenceEnv: referenceEnv, stdin: stdin)
}

/// Alternates a command with a reference that takes several commands run one after the other
/// (the time of all of them together), `count` times; returns the median seconds of each.
func alternate(_ count: Int, ours: [String], referenceSteps: [[String]], env: [String: String], referenceEnv: [String: String]? = nil,
               stdin: String? = nil) -> (ours: Double, reference: Double) {
    var o: [Double] = [], r: [Double] = []
    for _ in 0..<count {
        let a = spawnTimed(ours, env: env, stdin: stdin)
        precondition(a.status == 0, "\(ours.joined(separator: " ")) failed")
        o.append(a.seconds)
        var total = 0.0
        for step in referenceSteps {
            let b = spawnTimed(step, env: referenceEnv ?? env, stdin: stdin)
            precondition(b.status == 0, "\(step.joined(separator: " ")) failed")
            total += b.seconds
        }
        r.append(total)
    }
    return (median(o), median(r))
}

/// A row of two medians in milliseconds and their ratio.
@MainActor func reportTimes(_ name: String, _ ours: Double, _ reference: Double, target: String, digits: Int = 2) {
    report(Row(name: name, ours: fixed(ours * 1000) + " ms", reference: fixed(reference * 1000) + " ms",
               ratio: fixed(ours / reference, digits), target: target))
}

@MainActor var rows: [Row] = []
@MainActor func report(_ row: Row) {
    rows.append(row)
    print("  \(row.name): ours \(row.ours), reference \(row.reference), ratio \(row.ratio) (target \(row.target))")
}
