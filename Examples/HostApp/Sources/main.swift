// SPDX-License-Identifier: Apache-2.0
// A minimal host application: open the app's store (created on first use), enroll a passphrase
// the first time, then reopen the store with it and read a record.
//
//   swift run keybay-example-host            # asks for the passphrase on the terminal
//   echo secret | swift run keybay-example-host --passphrase-stdin
// It is its own package (Package.swift beside Sources/), built against Keybay by path.
import Glibc
import Keybay

/// The host's side of the plugin host services: here, only passphrases, from the terminal
/// (getpass turns echo off) or from standard input.
struct HostInteraction: KeybayInteraction {
    let fromStdin: Bool

    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var line = [UInt8](repeating: 0, count: 1025)
        defer { for i in line.indices { line[i] = 0 } }
        var n = 0
        if fromStdin {
            while n < line.count, read(0, &line[n], 1) == 1, line[n] != 0x0a { n += 1 }
        } else {
            let prompt = request.isConfirmation ? "Repeat the passphrase: " : "Passphrase: "
            guard let typed = getpass(prompt) else { throw KeybayError(.interactionRequired, "no terminal") }
            while n < line.count, typed[n] != 0 { line[n] = UInt8(bitPattern: typed[n]); typed[n] = 0; n += 1 }
        }
        guard n > 0, n <= buffer.count else { throw KeybayError(.cancelled, "no passphrase given") }
        buffer.copyBytes(from: line[0..<n])
        return n
    }

    func message(_ text: String, level: KeybayMessageLevel) {
        let line = Array((text + "\n").utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}

@main
struct HostApp {
    static func main() async {
        let interaction = HostInteraction(fromStdin: CommandLine.arguments.contains("--passphrase-stdin"))
        do {
            // Honours XDG_DATA_HOME / XDG_STATE_HOME; pass dataHome:/stateHome: to override.
            let configuration = try KeybayConfiguration(applicationID: "com.example.hostapp")
            let status = try KeybayStore.status(configuration)

            if status.state == .absent || status.state == .platformOnly {
                let session = try await KeybayStore.open(configuration, interaction: interaction)
                try session.set("api/token", string: "example-token-123")
                // Fast parameters for the example; omit the options to calibrate to ~1 s.
                let method = try await session.auth.add(plugin: "passphrase", options: [("memory-kib", "65536"), ("iterations", "3"), ("lanes", "2")])
                print("stored api/token and enrolled passphrase method \(method.id)")
                session.close()
            }

            // From now on the store opens only with the platform root and the passphrase.
            let method = try KeybayStore.status(configuration).methods.first { $0.plugin == "passphrase" }!
            let session = try await KeybayStore.open(configuration, method: method.id, interaction: interaction)
            defer { session.close() }
            let token = try session.getString("api/token") ?? ""
            print("api/token is \(token.count) characters long; methods: \(try session.auth.list().map(\.label))")
        } catch let error as KeybayError {
            print("keybay: \(error)")
            exit(1)
        } catch {
            print("error: \(error)")
            exit(1)
        }
    }
}
