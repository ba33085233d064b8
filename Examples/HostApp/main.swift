// A minimal host application: open the app's store (created on first use), write a record,
// read it back. Run: swift run keybay-example-host
import Keybay

@main
struct HostApp {
    static func main() async {
        do {
            // Honours XDG_DATA_HOME / XDG_STATE_HOME; pass dataHome:/stateHome: to override.
            let configuration = try KeybayConfiguration(applicationID: "com.example.hostapp")
            let session = try await KeybayStore.open(configuration)
            defer { session.close() }

            if try session.getString("api/token") == nil {
                try session.set("api/token", string: "example-token-123")
                print("stored api/token in \(session.storePath)")
            }
            let token = try session.getString("api/token") ?? ""
            print("api/token is \(token.count) characters long; keys: \(try session.keys())")
        } catch let error as KeybayError {
            print("keybay: \(error)")
        } catch {
            print("error: \(error)")
        }
    }
}
