// SPDX-License-Identifier: Apache-2.0
import Glibc

/// `/bin/sh -c command` with standard input from /dev/null and standard output sent to
/// standard error (plugin-check's own output, --json included, stays on standard output).
enum ShellCommand {
    /// Its exit status; 256 + the signal if it was killed; -1 if it could not be started.
    static func run(_ command: String) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, 2, 1)
        let argv: [UnsafeMutablePointer<CChar>?] = ["/bin/sh", "-c", command].map { (word: String) in strdup(word) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        if status & 0x7f != 0 { return 256 + (status & 0x7f) }
        return (status >> 8) & 0xff
    }
}
