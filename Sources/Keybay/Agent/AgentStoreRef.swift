// SPDX-License-Identifier: Apache-2.0
/// Which store a request is about, as the agent tells stores apart: the application and the two
/// base directories (the store's and its root's). Paths, not secrets.
struct AgentStoreRef: Hashable, Sendable {
    let applicationID: String
    let dataHome: String
    let stateHome: String

    /// The store file, for messages.
    var storePath: String { StoreLocation(dataHome: dataHome, applicationID: applicationID).storePath }

    var encodedBytes: Int { AgentFrame.lp(applicationID) + AgentFrame.lp(dataHome) + AgentFrame.lp(stateHome) }

    func encode(into frame: inout AgentFrame) {
        frame.text(applicationID)
        frame.text(dataHome)
        frame.text(stateHome)
    }

    static func decode(_ reader: inout ByteReader) throws -> AgentStoreRef {
        AgentStoreRef(applicationID: try reader.text("application id", maxLength: 120),
                      dataHome: try reader.text("data home"), stateHome: try reader.text("state home"))
    }
}
