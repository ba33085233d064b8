// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `import secret-service --attr NAME=VALUE... --key-from ATTR [--prefix P]`.
extension Command {
    static func importSecretService(_ c: Context) throws -> Int32 {
        throw KeybayError(.unsupported, "import secret-service is not available yet")
    }
}
