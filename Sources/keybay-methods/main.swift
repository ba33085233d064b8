// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

// No core dumps: a crash must not write secrets to disk.
var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &noCore)
signal(SIGPIPE, SIG_IGN)
// A file-size limit (ulimit -f) makes a write fail with EFBIG, reported as `io` with the staging
// file removed, instead of killing the process mid-write.
signal(SIGXFSZ, SIG_IGN)
// A parent may have started us with signals blocked (they are inherited): Ctrl-C and SIGTERM
// must still end a prompt or a wait for a touch.
var unblocked = sigset_t()
sigemptyset(&unblocked)
sigprocmask(SIG_SETMASK, &unblocked, nil)
// A standard descriptor the parent closed is taken by /dev/null opened the wrong way round: no
// file of the store is ever opened as 0, 1 or 2 (output meant for the user would go into it, and
// closing standard output would close it), and a write to a closed stdout still fails (`io`).
for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 {
    guard open("/dev/null", (fd == 0 ? O_WRONLY : O_RDONLY) | O_CLOEXEC) == fd else {
        let text = Array("keybay-methods: descriptor \(fd) is closed and /dev/null cannot take its place [io]\n".utf8)
        _ = write(2, text, text.count)
        exit(1)
    }
}

enum Exit {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 2
    static let notFound: Int32 = 3
    static let interactionNeeded: Int32 = 4

    static func code(for error: KeybayError) -> Int32 {
        if error.isInvalidInput { return usage }
        if error.code == .interactionRequired { return interactionNeeded }
        return failure
    }
}

var status: Int32
// Arguments as the bytes they are: a value is stored byte for byte, anything else must be UTF-8.
let argv = (1..<Int(CommandLine.argc)).map { i in
    Array(UnsafeBufferPointer(start: UnsafeRawPointer(CommandLine.unsafeArgv[i]!).assumingMemoryBound(to: UInt8.self),
                              count: strlen(CommandLine.unsafeArgv[i]!)))
}
var parsed: Arguments?
/// With `--json` an error is also one object on standard output; when the arguments could not be
/// parsed, `--json` anywhere before `--` counts.
var jsonErrors: Bool { parsed?.json ?? argv.prefix { $0 != Array("--".utf8) }.contains(Array("--json".utf8)) }
do {
    let arguments = try Arguments(bytes: argv)
    parsed = arguments
    status = try Command.run(arguments)
} catch let e as Arguments.UsageError {
    Output.error(e.message + " (see 'keybay-methods --help')")
    if jsonErrors { Output.jsonError(code: "usage", message: e.message) }
    status = Exit.usage
} catch let e as KeybayError {
    Output.error(e.description)
    if jsonErrors { Output.jsonError(code: e.code.rawValue, message: e.message, fields: Output.errorFields(e)) }
    status = Exit.code(for: e)
} catch {
    Output.error("\(error)")
    if jsonErrors { Output.jsonError(code: "internal", message: "\(error)") }
    status = Exit.failure
}
Output.closeStandardOutput()
if let failure = Output.standardOutputFailure, status == Exit.success || status == Exit.notFound {
    Output.error("cannot write standard output: \(failure) [io]")
    status = Exit.failure
}
exit(status)
