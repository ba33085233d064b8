// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// Turns terminal echo off for a secret prompt and makes sure it comes back: when the prompt
/// returns, and on SIGINT, SIGTERM, SIGHUP or SIGQUIT, whose handler restores the saved state and
/// then dies of the same signal (the status a shell sees is unchanged). A signal the process was
/// started with ignored stays ignored.
enum EchoGuard {
    static func withEchoOff<R>(_ tty: Int32, _ body: () throws -> R) rethrows -> R {
        var saved = termios()
        guard tcgetattr(tty, &saved) == 0 else { return try body() }
        echoGuardSaved.pointee = saved
        echoGuardDescriptor = tty
        let previous = echoGuardSignals.map { signal($0, echoGuardRestoreAndDie) }
        for (s, old) in zip(echoGuardSignals, previous) where unsafeBitCast(old, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) {
            signal(s, SIG_IGN)
        }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(tty, TCSAFLUSH, &quiet)
        defer {
            tcsetattr(tty, TCSAFLUSH, &saved)
            for (s, old) in zip(echoGuardSignals, previous) { signal(s, old) }
            echoGuardDescriptor = -1
        }
        return try body()
    }
}

// Plain globals: the handler reads them, so they are set before it is installed.
nonisolated(unsafe) private var echoGuardDescriptor: Int32 = -1
// The saved state lives in memory of termios' own size: a global `termios` var gets 57 bytes of
// storage while a copy of the struct writes 60 (AddressSanitizer: global-buffer-overflow).
nonisolated(unsafe) private let echoGuardSaved = UnsafeMutablePointer<termios>.allocate(capacity: 1)
private let echoGuardSignals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

/// Async-signal-safe: tcsetattr, signal and raise only. The re-raised signal is blocked while
/// the handler runs and delivered, with its default action, as it returns.
private func echoGuardRestoreAndDie(_ sig: Int32) {
    if echoGuardDescriptor >= 0 { tcsetattr(echoGuardDescriptor, TCSANOW, echoGuardSaved) }
    signal(sig, SIG_DFL)
    raise(sig)
}
