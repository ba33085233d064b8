// keybay-test-writer: one write through the library API, for the crash-kill harness (which
// SIGKILLs it at random moments). Exit 0 means the write was acknowledged (it returned).
//   keybay-test-writer APP set KEY < value | rm KEY | clear | enroll | remove METHOD-ID
// Protected stores are unlocked with their first method and the test PIN "1" (test-counting).
import Glibc
import Keybay

struct TestPIN: KeybayInteraction {
    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        buffer[0] = 0x31
        return 1
    }
}

func readStdin() -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = read(0, &chunk, chunk.count)
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return bytes
}

let args = Array(CommandLine.arguments.dropFirst())
do {
    var config = try KeybayConfiguration(applicationID: args[0])
    if let root = getenv("KEYBAY_ROOT").map({ String(cString: $0) }), !root.isEmpty { config.rootPlugin = root }
    let status = try KeybayStore.status(config)
    let session = try KeybayStore.open(config, method: status.methods.first?.id, interaction: TestPIN())
    switch args[1] {
    case "set": try session.set(args[2], bytes: readStdin())
    case "rm": try session.delete(args[2])
    case "clear": try session.clearAll()
    case "enroll": try session.auth.add(plugin: "test-counting")
    case "remove": try session.auth.remove(args[2])
    default: exit(2)
    }
    exit(0)
} catch {
    let text = Array("keybay-test-writer: \(error)\n".utf8)
    _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}
