// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay
import CKeybayPlugin

/// The host services that hand an isolated plugin a descriptor: open_file (only the file the user
/// named in an enroll option, as recorded then) and connect_socket (only a socket the plugin
/// declared, never the agent's or the session bus). Hostile plugins compiled from C at test time,
/// run by the CLI; assertions on exit codes and the `--json` error fields.
@Suite struct HostAccessTests {
    /// A method plugin whose enroll and unwrap are the C bodies given (`h` the host, `o`/`n` the
    /// options, `p` the params out or in, `s` the secret), declaring `entries` (C string literals).
    static func build(_ box: Sandbox, _ id: String, enroll: String, unwrap: String, entries: String? = nil) throws -> String {
        let dir = box.root + "/plugins-\(id)"
        let plain = """
            #define _GNU_SOURCE
            #include <fcntl.h>
            #include <stdio.h>
            #include <sys/socket.h>
            #include <sys/stat.h>
            #include <sys/un.h>
            #include <unistd.h>
            \(PluginLoaderTests.source(id: id, enroll: enroll, unwrap: unwrap))
            """
        try PluginLoaderTests.build(entries.map { PluginIsolationTests.declaring(plain, $0) } ?? plain, fileID: id, in: dir)
        return dir
    }

    /// Fixed parameters (4 bytes) and M; what a plugin returns once its escape worked.
    static let succeed = "p->data = calloc(1, 4); p->length = 4; memset(s, 7, 32); return KEYBAY_OK;"

    /// A key file of the user's in the test's home.
    static func keyFile(_ box: Sandbox, _ name: String = "a.key") -> String {
        let path = box.root + "/" + name
        writeBytes(path, Array(repeating: 0x41, count: 64))
        return path
    }

    // MARK: open_file

    /// At enroll the host opens only the option the user gave, and never a file of Keybay's own or
    /// one that breaks the loader's rules, whatever the user typed; the enrollment then fails with
    /// the host's reason (the plugin passes the status on) and the store is left as it was.
    @Test(arguments: [
        ("secret", "key", "invalid-argument", "option-not-given"),
        ("path", "store", "insecure-permissions", "keybay-file"),
        ("path", "root", "insecure-permissions", "keybay-file"),
        ("path", "link-to-store", "insecure-permissions", "link-out"),
        ("path", "hard-linked", "insecure-permissions", "hard-link"),
        ("path", "relative", "invalid-argument", "not-absolute"),
    ])
    func enrollOpensOnlyAFileTheUserNamed(_ asked: String, _ given: String, _ code: String, _ reason: String) throws {
        let box = Sandbox()
        try PluginIsolationTests.setRecord(box)
        let key = Self.keyFile(box)
        symlink(box.storePath, box.root + "/link-to-store")
        link(Self.keyFile(box, "other.key"), box.root + "/hard-linked")
        let value = ["key": key, "store": box.storePath, "root": box.rootPath, "relative": "a.key"][given] ?? box.root + "/" + given
        let dir = try Self.build(box, "asks-\(asked)", enroll: """
            int fd = -1; keybay_status st = h->open_file(h->context, "\(asked)", &fd);
            if (st != KEYBAY_OK) return st;
            \(Self.succeed)
            """, unwrap: "return KEYBAY_ERR_IO;")
        let before = readBytes(box.storePath)
        let r = try box.cli("enroll", "asks-\(asked)", "--opt", "path=" + value, "--plugin-dir", dir, "--json")
        #expect(r.status == (code == "invalid-argument" ? 2 : 1) && r.error?.code == code && r.error?.reason == reason, "\(r.status) \(r.out)")
        #expect(readBytes(box.storePath) == before)
    }

    /// At unlock the host opens the file recorded at enrollment, whatever the plugin's parameters
    /// say: a plugin whose parameters name the store file or the root file (its own choice at
    /// enroll) asks for that, for an option never granted, and opens it itself; it gets the key
    /// file alone, and says so with its own reason.
    @Test(arguments: ["store", "root"])
    func unlockOpensOnlyTheGrantedFileWhateverTheParametersSay(_ target: String) throws {
        let box = Sandbox()
        try PluginIsolationTests.setRecord(box)
        let key = Self.keyFile(box)
        let targetPath = target == "store" ? box.storePath : box.rootPath
        let dir = try Self.build(box, "names-\(target)", enroll: """
            int fd = -1; keybay_status st = h->open_file(h->context, "path", &fd);
            if (st != KEYBAY_OK) return st;
            close(fd);
            p->data = (uint8_t *)strdup("\(targetPath)"); p->length = strlen((char *)p->data); memset(s, 7, 32); return KEYBAY_OK;
            """, unwrap: """
            char target[512]; int fd = -1; struct stat got, wanted;
            if (n >= sizeof target || stat("\(targetPath)", &wanted) != 0) return KEYBAY_ERR_INTERNAL;
            memcpy(target, p, n); target[n] = 0;
            if (h->open_file(h->context, "store", &fd) == KEYBAY_OK) return KEYBAY_OK;
            if ((fd = open(target, O_RDONLY)) >= 0) return KEYBAY_OK;
            if (h->open_file(h->context, "path", &fd) != KEYBAY_OK || fstat(fd, &got) != 0) return KEYBAY_ERR_INTERNAL;
            if (got.st_ino == wanted.st_ino && got.st_dev == wanted.st_dev) return KEYBAY_OK;
            h->set_error_detail(h->context, "granted-file-only", -1, 0); h->set_error(h->context, "the host opened the key file alone");
            return KEYBAY_ERR_IO;
            """)
        let enrolled = try box.cli("enroll", "names-\(target)", "--opt", "path=" + key, "--plugin-dir", dir)
        try #require(enrolled.status == 0, "\(enrolled.stderr)")
        let r = try PluginIsolationTests.get(box, dir)
        #expect(r.status == 1 && r.error?.code == "io" && r.error?.reason == "granted-file-only", "\(r.status) \(r.out)")
    }

    // MARK: connect_socket

    /// The runtime directory of a test (0700), for `XDG_RUNTIME_DIR`, with Keybay's own in it.
    static func runtimeDirectory(_ box: Sandbox) -> String {
        let run = box.root + "/run"
        mkdir(run, 0o700)
        mkdir(run + "/keybay", 0o700)
        return run
    }

    /// `verify` (which no agent serves) through the plugin, with the runtime directory and a
    /// session bus address of the test's.
    static func verify(_ box: Sandbox, _ dir: String, runtime: String) throws -> RunResult {
        let environment = box.environment.merging(["XDG_RUNTIME_DIR": runtime,
                                                   "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtime)/other%2dbus,guid=0123"]) { $1 }
        return try run(cliPath, ["--json", "verify", "--plugin-dir", dir], environment: environment)
    }

    /// A plugin that asks the host for `asked` (it declares `declared`, both as the plugin writes
    /// them), and reports whether it got a connection (writes "hello" on it) or the host's refusal.
    static func connecting(_ box: Sandbox, _ id: String, declared: [String], asked: String, before: String = "") throws -> String {
        let dir = try build(box, id, enroll: succeed, unwrap: """
            \(before)
            int fd = -1; keybay_status st = h->connect_socket(h->context, "\(asked)", &fd);
            if (st != KEYBAY_OK) return st;
            if (write(fd, "hello", 5) != 5) return KEYBAY_ERR_IO;
            close(fd); memset(s, 7, 32); return KEYBAY_OK;
            """, entries: declared.map { "\"unix:\($0)\"" }.joined(separator: ", "))
        let enrolled = try box.cli("enroll", id, "--plugin-dir", dir)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        return dir
    }

    /// Whatever a plugin declares, the host never connects it to the agent's socket or the session
    /// bus (by its runtime path, by the bus address, or through a link to it), nor to a socket it
    /// did not declare: real listeners there are never reached.
    @Test(arguments: [
        ("keybay/agent.socket", "keybay/agent.socket", "insecure-permissions", "keybay-socket"),
        ("bus", "bus", "insecure-permissions", "session-bus"),
        ("other-bus", "other-bus", "insecure-permissions", "session-bus"),
        ("alias", "bus", "insecure-permissions", "session-bus"),
        ("undeclared", "service", "unsupported", "undeclared-socket"),
    ])
    func theAgentAndTheSessionBusAreNeverConnected(_ asked: String, _ listening: String, _ code: String, _ reason: String) throws {
        let box = Sandbox()
        try PluginIsolationTests.setRecord(box)
        let runtime = Self.runtimeDirectory(box)
        let listener = try UnixListener(runtime + "/" + listening)
        symlink(runtime + "/bus", runtime + "/alias")
        let declared = asked == "undeclared" ? "$XDG_RUNTIME_DIR/service" : "$XDG_RUNTIME_DIR/" + asked
        let dir = try Self.connecting(box, "connects-\(asked.replacingOccurrences(of: "/", with: "-"))", declared: [declared],
                                      asked: "$XDG_RUNTIME_DIR/" + asked)
        let r = try Self.verify(box, dir, runtime: runtime)
        #expect(r.status == 1 && r.error?.code == code && r.error?.reason == reason, "\(r.status) \(r.out)")
        #expect(!listener.wasReached)
    }

    /// A declared socket of an ordinary service is reached through the host; the plugin's own
    /// `socket(AF_UNIX)` is refused inside the sandbox although it declares `unix:`.
    @Test func aDeclaredSocketIsReachedThroughTheHostAndNeverDirectly() throws {
        let box = Sandbox()
        try PluginIsolationTests.setRecord(box)
        let runtime = Self.runtimeDirectory(box)
        let service = try UnixListener(runtime + "/service")
        let dir = try Self.connecting(box, "connects-service", declared: ["$XDG_RUNTIME_DIR/service"], asked: "$XDG_RUNTIME_DIR/service")
        let r = try Self.verify(box, dir, runtime: runtime)
        #expect(r.status == 0, "\(r.status) \(r.out)\(r.stderr)")
        #expect(service.received == "hello")

        let other = Sandbox()
        try PluginIsolationTests.setRecord(other)
        let direct = try Self.connecting(other, "own-socket", declared: ["$XDG_RUNTIME_DIR/service"], asked: "$XDG_RUNTIME_DIR/service", before: """
            struct sockaddr_un a = { .sun_family = AF_UNIX }; snprintf(a.sun_path, sizeof a.sun_path, "%s", "\(runtime)/service");
            int own = socket(AF_UNIX, SOCK_STREAM, 0);
            if (own >= 0 && connect(own, (struct sockaddr *)&a, sizeof a) == 0) return KEYBAY_OK;
            if (own >= 0) return KEYBAY_ERR_INTERNAL;
            h->set_error_detail(h->context, "no-socket-of-its-own", -1, 0); h->set_error(h->context, "socket() was refused");
            return KEYBAY_ERR_IO;
            """)
        let refused = try Self.verify(other, direct, runtime: runtime)
        #expect(refused.status == 1 && refused.error?.code == "io" && refused.error?.reason == "no-socket-of-its-own", "\(refused.status) \(refused.out)")
        #expect(!service.wasReached)
    }

    /// A `unix:` entry outside /run and the runtime directory, or not a plain path, refuses the
    /// plugin, isolated and in process alike.
    @Test(arguments: ["/tmp/x.sock", "/run", "$XDG_RUNTIME_DIR/../x", "$XDG_RUNTIME_DIR", "relative/x", "/run//x"], [true, false])
    func aMalformedSocketDeclarationIsRefused(_ entry: String, _ isolated: Bool) throws {
        let box = Sandbox()
        let dir = box.root + "/plugins"
        let source = PluginIsolationTests.declaring(PluginLoaderTests.source(id: "bad-socket"), "\"unix:\(entry)\"")
        try PluginLoaderTests.build(source, fileID: "bad-socket", in: dir)
        let search = KeybayPluginSearch(directories: [dir], environmentPath: nil, isolation: isolated ? .isolated : .inProcess)
        let e = keybayError { _ = try PluginLoader.load(id: "bad-socket", kind: KEYBAY_KIND_METHOD, search: search) }
        #expect(e?.code == .pluginRefused && e?.reason == "sandbox-declaration", "\(String(describing: e))")
    }
}

/// A listening unix socket a test checks was, or was never, reached.
final class UnixListener {
    let fd: Int32

    init(_ path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard let address = UnixSocket.address(path) else { throw KeybayError(.invalidArgument, "\(path) is too long for a socket") }
        let bound = UnixSocket.withAddress(address) { bind(fd, $0, $1) }
        precondition(fd >= 0 && bound == 0 && listen(fd, 8) == 0, "cannot listen on \(path)")
    }

    /// Whether a connection is waiting (a connect completes in the kernel before accept).
    var wasReached: Bool {
        let c = accept(fd, nil, nil)
        if c >= 0 { close(c) }
        return c >= 0
    }

    /// What the first waiting connection sent before it closed, nil when none waits.
    var received: String? {
        let c = accept(fd, nil, nil)
        guard c >= 0 else { return nil }
        defer { close(c) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let n = read(c, &bytes, bytes.count)
        return n >= 0 ? String(decoding: bytes[0..<n], as: UTF8.self) : nil
    }

    deinit { close(fd) }
}
