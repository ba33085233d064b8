import Glibc
import Keybay

// No core dumps: a crash must not write secrets to disk.
var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &noCore)
signal(SIGPIPE, SIG_IGN)
// A parent may have started us with signals blocked (they are inherited): Ctrl-C and SIGTERM
// must still end a prompt or a wait for a touch.
var unblocked = sigset_t()
sigemptyset(&unblocked)
sigprocmask(SIG_SETMASK, &unblocked, nil)

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

let status: Int32
do {
    let arguments = try Arguments(Array(CommandLine.arguments.dropFirst()))
    status = try Command.run(arguments)
} catch let e as Arguments.UsageError {
    Output.error(e.message + " (see 'keybay-methods --help')")
    status = Exit.usage
} catch let e as KeybayError {
    Output.error(e.description)
    status = Exit.code(for: e)
} catch {
    Output.error("\(error)")
    status = Exit.failure
}
exit(status)
