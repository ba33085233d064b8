// SPDX-License-Identifier: Apache-2.0
/// Where one application's store lives: `<dataHome>/keybay/<applicationID>/`, and the live
/// file's path in it (for messages).
struct StoreLocation: Sendable {
    let dataHome: String
    let applicationID: String

    /// The live file's path.
    var storePath: String { dataHome + "/keybay/" + applicationID + "/" + StoreFile.liveName }
}
