// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// A throwaway pair of XDG base directories, removed when the test ends.
final class Sandbox: Sendable {
    let root: String
    let dataHome: String
    let stateHome: String
    let app: String

    /// Tests write to pipes of children that may exit early (a refused oversized value): that
    /// must be an EPIPE for the writer, not a SIGPIPE that kills the whole test process.
    private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN) }()

    init(app: String = "com.example.test") {
        Self.ignoreSIGPIPE
        var template = Array("/tmp/keybay-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        root = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        dataHome = root + "/data"
        stateHome = root + "/state"
        self.app = app
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// The sandbox's configuration, which also finds the test plugins (testPluginDirectory), and
    /// uses no agent.
    func configuration(app: String? = nil) throws -> KeybayConfiguration {
        var c = try KeybayConfiguration(applicationID: app ?? self.app, dataHome: dataHome, stateHome: stateHome)
        c.pluginSearch.directories.append(testPluginDirectory)
        // Never the user's agent (AgentSandbox gives a test one of its own).
        c.agentSocket = nil
        return c
    }

    var storeDirectory: String { dataHome + "/keybay/" + app }
    var storePath: String { storeDirectory + "/keybay.v2.store" }
    var stagingPath: String { storeDirectory + "/keybay.v2.stage" }
    var lockPath: String { storeDirectory + "/keybay.v2.lock" }
    var rootPath: String { stateHome + "/keybay/" + app + "/file-root.key" }

    var environment: [String: String] {
        // No Swift crash backtracer for children: some tests crash them on purpose, and a
        // backtracer (found next to a dynamically linked runtime, e.g. in sanitizer builds)
        // would outlive them holding their output pipes.
        var env = ["XDG_DATA_HOME": dataHome, "XDG_STATE_HOME": stateHome, "KEYBAY_APP_ID": app,
                   "PATH": "/usr/bin:/bin", "HOME": root, "SWIFT_BACKTRACE": "enable=no",
                   // No pinentry of this machine's answers for a test that did not start one.
                   "KEYBAY_PINENTRY": "none"]
        env["KEYBAY_PLUGIN_PATH"] = [sanitizerPluginDirectory, testPluginDirectory].compactMap { $0 }.joined(separator: ":")
        // Under scripts/sanitizers.sh the children's reports go to the files the script checks
        // (log_path), with the same suppressions: their stderr is captured or discarded.
        for name in ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"] {
            if let value = ProcessInfo.processInfo.environment[name] { env[name] = value }
        }
        return env
    }
}

/// The bytes of the file at `path` (following links), or nil if it cannot be read.
func readBytes(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = read(fd, &chunk, chunk.count)
        if n < 0 { if errno == EINTR { continue }; return nil }
        if n == 0 { return bytes }
        bytes += chunk[0..<n]
    }
}

func writeBytes(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0, "cannot write \(path)")
    bytes.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

func exists(_ path: String) -> Bool {
    var st = stat()
    return lstat(path, &st) == 0
}

func mode(_ path: String) -> mode_t {
    var st = stat()
    precondition(lstat(path, &st) == 0)
    return st.st_mode & 0o7777
}

func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = s.startIndex
    while i < s.endIndex {
        let j = s.index(i, offsetBy: 2)
        out.append(UInt8(s[i..<j], radix: 16)!)
        i = j
    }
    return out
}

func hexString(_ b: some Collection<UInt8>) -> String {
    b.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

/// The directory holding the built products (the test bundle sits next to the CLI).
let buildDirectory: String = {
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
    var dir = (exe as NSString).deletingLastPathComponent
    // xctest bundles on Linux are plain executables in the build directory.
    while !dir.isEmpty && dir != "/" && !FileManager.default.fileExists(atPath: dir + "/keybay-methods") {
        dir = (dir as NSString).deletingLastPathComponent
    }
    return dir
}()

let cliPath = buildDirectory + "/keybay-methods"
/// The helper that runs method plugins isolated, for hosts built outside this build directory
/// (they are told with KEYBAY_PLUGIN_HOST; the CLI finds it beside itself).
let pluginHostPath = buildDirectory + "/keybay-plugin-host"

/// Under a sanitizer, scripts/sanitizers.sh builds the plugins once more without one and names
/// that directory here: a sanitized plugin cannot be loaded by a host built without the same
/// sanitizer runtime (the example host, or Swift plugins needing symbols the runner does not
/// export). Tests and their child processes then find every plugin there through
/// KEYBAY_PLUGIN_PATH, which the plugin search puts before the executable's directory.
let sanitizerPluginDirectory: String? = ProcessInfo.processInfo.environment["KEYBAY_TEST_PLUGIN_DIRECTORY"]

/// Where the plugins the tests load come from.
let pluginDirectory = sanitizerPluginDirectory ?? buildDirectory

/// The test plugins (test-counting, test-ceremony, test-fido2, test-floor-crash) are built as libkeybaytest-<name>.so, a name no
/// plugin search matches, so the CLI in the build directory, which searches its own directory,
/// does not list them. Tests find them here, copied under their plugin file names
/// (libkeybay-test-<name>.so), and name this directory: KEYBAY_PLUGIN_PATH for child processes
/// (Sandbox.environment), the plugin search of Sandbox.configuration() in this process.
let testPluginDirectory: String = {
    let directory = buildDirectory + "/keybay-test-plugins"
    mkdir(directory, 0o700)
    for name in ["counting", "ceremony", "fido2", "floor-crash"] {
        // Builds from before the rename left the test plugins in the build directory itself.
        unlink(buildDirectory + "/libkeybay-test-\(name).so")
        let built = (sanitizerPluginDirectory ?? buildDirectory) + "/libkeybaytest-\(name).so"
        guard let bytes = readBytes(built) else { fatalError("test plugin \(built) is not built") }
        // Copied beside, then renamed over: a test process running meanwhile never maps half a file.
        let staged = directory + "/.libkeybay-test-\(name).so.\(getpid())"
        writeBytes(staged, bytes)
        chmod(staged, 0o755)
        precondition(rename(staged, directory + "/libkeybay-test-\(name).so") == 0, "cannot place the test plugin \(name)")
    }
    return directory
}()

/// The sanitizer the suite runs under (scripts/sanitizers.sh), if any.
let sanitizer: String? = ProcessInfo.processInfo.environment["KEYBAY_TEST_SANITIZER"]

/// Plugins for hosts built without a sanitizer (the example host), which cannot load sanitized ones.
let unsanitizedPluginDirectory = ProcessInfo.processInfo.environment["KEYBAY_TEST_HOST_PLUGIN_DIRECTORY"] ?? pluginDirectory

/// The package's root directory, for scripts under Tests/.
let packageDirectory: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<4 { url.deleteLastPathComponent() }
    return url.path
}()

struct RunResult {
    let status: Int32
    let signalled: Bool
    let stdout: [UInt8]
    let stderr: String
    var out: String { String(decoding: stdout, as: UTF8.self) }
}

/// Runs a program with the sandbox's environment, optional stdin, and returns its status and output.
@discardableResult
func run(_ executable: String, _ arguments: [String], environment: [String: String], stdin: [UInt8]? = nil) throws -> RunResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    p.environment = executable == "/usr/bin/strace" ? withoutLeakChecks(environment) : environment
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    let input = Pipe()
    p.standardInput = stdin == nil ? FileHandle.nullDevice : input
    try p.run()
    if let stdin {
        // Write from another thread so a large input cannot deadlock against a full stdout pipe.
        // A child that exits before reading it all (a refused value, a failure injected early)
        // makes the write fail with EPIPE: the throwing form reports that, where `write(_:)`
        // traps and takes the whole test process down.
        let writer = Thread {
            try? input.fileHandleForWriting.write(contentsOf: Data(stdin))
            try? input.fileHandleForWriting.close()
        }
        writer.start()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return RunResult(status: p.terminationStatus, signalled: p.terminationReason == .uncaughtSignal,
                     stdout: [UInt8](outData), stderr: String(decoding: errData, as: UTF8.self))
}

/// LeakSanitizer cannot run in a traced process (it stops the process with ptrace itself, and
/// dies when strace already does): under scripts/sanitizers.sh, children run by strace keep
/// AddressSanitizer's checks but not the leak check.
func withoutLeakChecks(_ environment: [String: String]) -> [String: String] {
    var environment = environment
    for name in ["ASAN_OPTIONS", "LSAN_OPTIONS"] {
        if let value = environment[name] { environment[name] = value + ":detect_leaks=0" }
    }
    return environment
}

extension Sandbox {
    @discardableResult
    func cli(_ arguments: String..., stdin: [UInt8]? = nil) throws -> RunResult {
        try run(cliPath, arguments, environment: environment, stdin: stdin)
    }

    /// Runs the CLI with `secret` and a newline on descriptor 3 (sh opens a file there), with
    /// `option` and "3" after the arguments when given (`--passphrase-fd 3`, `--pin-fd 3`).
    /// Without a secret the CLI runs plainly, with nothing on descriptor 3.
    func cli(_ arguments: [String], secret: String?, option: String?, environment: [String: String]? = nil) throws -> RunResult {
        let environment = environment ?? self.environment
        guard let secret else { return try run(cliPath, arguments, environment: environment) }
        let file = root + "/secret-\(UUID().uuidString)"
        try (secret + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        defer { unlink(file) }
        let fd = option.map { [$0, "3"] } ?? []
        return try run("/bin/sh", ["-c", "exec \"$0\" \"$@\" 3<\"\(file)\"", cliPath] + arguments + fd, environment: environment)
    }
}

/// The `{"error": {…}}` object a `--json` run printed (docs/cli.md, "JSON output"): the fields
/// tests tell causes apart by, never the message.
struct CLIError: Equatable, CustomStringConvertible {
    let code: String
    let reason: String?
    let triesLeft: Int?
    let path: String?
    let pluginID: String?
    let methodID: String?
    /// `pcrs`: the PCRs a `pcr-mismatch` names.
    let pcrs: [Int]?
    /// The names of the members the object has (a field not set must be absent, not null).
    let members: Set<String>

    var description: String { "\(code) reason=\(reason ?? "-") triesLeft=\(triesLeft.map(String.init) ?? "-") path=\(path ?? "-") pluginId=\(pluginID ?? "-") methodId=\(methodID ?? "-") \(members.sorted())" }
}

/// The error object a `--json` run printed as its whole standard output (one line), or nil when
/// it printed anything else. `afterAResult`: a change that took effect but failed after (`io`
/// with the result shown), whose output is the result's line and then the error's.
func jsonError(_ r: RunResult, afterAResult: Bool = false) -> CLIError? {
    let lines = r.stdout.split(separator: 0x0a, omittingEmptySubsequences: false)
    guard r.stdout.last == 0x0a, lines.count == (afterAResult ? 3 : 2), let line = lines.dropLast().last,
          let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], object.count == 1,
          let error = object["error"] as? [String: Any], let code = error["code"] as? String else { return nil }
    return CLIError(code: code, reason: error["reason"] as? String, triesLeft: (error["triesLeft"] as? NSNumber)?.intValue,
                    path: error["path"] as? String, pluginID: error["pluginId"] as? String, methodID: error["methodId"] as? String,
                    pcrs: (error["pcrs"] as? [NSNumber])?.map(\.intValue), members: Set(error.keys))
}

/// The code of the error object a `--json` run printed (see jsonError).
func jsonErrorCode(_ r: RunResult) -> String? { jsonError(r)?.code }

extension RunResult {
    /// The `--json` error object this run printed (see jsonError); nil without one.
    var error: CLIError? { jsonError(self) }
}

/// Passphrase parameters that keep tests fast (8 MiB, one pass, one lane), as enroll options
/// and as CLI flags.
let fastPassphraseOptions = [("memory-kib", "8192"), ("iterations", "1"), ("lanes", "1")]
let fastPassphraseFlags = fastPassphraseOptions.flatMap { ["--opt", "\($0.0)=\($0.1)"] }

/// The ids of the methods `list --json` shows, in its order.
func methodIDs(_ box: Sandbox, environment: [String: String]? = nil) throws -> [String] {
    let listed = try run(cliPath, ["list", "--json"], environment: environment ?? box.environment)
    let methods = try JSONSerialization.jsonObject(with: Data(listed.stdout)) as? [[String: Any]]
    return methods?.compactMap { $0["id"] as? String } ?? []
}

/// The KeybayError `body` throws, or nil if it returns. Any other error is recorded as an
/// issue (and gives nil), so "== nil" never passes on an error of the wrong type.
func keybayError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> KeybayError? {
    do {
        try body()
        return nil
    } catch let e as KeybayError {
        return e
    } catch {
        Issue.record("unexpected error: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

func keybayError(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> KeybayError? {
    do {
        try await body()
        return nil
    } catch let e as KeybayError {
        return e
    } catch {
        Issue.record("unexpected error: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// The code of the KeybayError `body` throws, or nil if it returns (other errors: see keybayError).
func keybayCode(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> KeybayError.Code? {
    keybayError(body, sourceLocation: sourceLocation)?.code
}

func keybayCode(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> KeybayError.Code? {
    await keybayError(body, sourceLocation: sourceLocation)?.code
}

/// posix_spawn with stdin from a file, stdout to `stdout` (a descriptor, e.g. a pipe's write end)
/// or /dev/null, and stderr to /dev/null, for tests that need exact control over a child's
/// lifetime (Foundation's Process adds its own reaping and latency).
/// A pipe whose two ends are closed in any child a later exec starts, so a child another test
/// spawns meanwhile does not keep the write end open (a reader waiting for EOF would wait for it).
/// (Glibc's pipe2 is not visible from Swift; the window before fcntl is a few instructions.)
func closeOnExecPipe(_ fds: inout [Int32]) -> Bool {
    guard pipe(&fds) == 0 else { return false }
    return fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0 && fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0
}

func spawnChild(_ executable: String, _ arguments: [String], environment: [String: String], stdinPath: String, stdout: Int32? = nil) -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, stdinPath, O_RDONLY, 0)
    if let stdout { posix_spawn_file_actions_adddup2(&actions, stdout, 1) } else { posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) }
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
    precondition(rc == 0, "posix_spawn failed: \(rc)")
    return pid
}

/// Waits for a child; returns (exited normally with status 0, was killed by a signal).
func waitChild(_ pid: pid_t) -> (succeeded: Bool, signalled: Bool) {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let signalled = (status & 0x7f) != 0 && (status & 0x7f) != 0x7f
    return (!signalled && (status >> 8) & 0xff == 0, signalled)
}
