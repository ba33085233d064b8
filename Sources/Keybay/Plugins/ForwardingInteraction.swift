// SPDX-License-Identifier: Apache-2.0
/// An interaction that passes every member to another: the base of the library's wrappers,
/// which each change one member (what a ceremony asks, what it shows) and keep the rest.
class ForwardingInteraction: KeybayInteraction, @unchecked Sendable {
    // @unchecked: `inner` is immutable and Sendable; subclasses keep their own state Sendable.
    let inner: any KeybayInteraction

    init(_ inner: any KeybayInteraction) { self.inner = inner }

    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try inner.askSecret(request, into: buffer)
    }

    func message(_ text: String, level: KeybayMessageLevel) { inner.message(text, level: level) }

    func confirm(_ question: String) throws -> Bool { try inner.confirm(question) }

    func showSecret(_ secret: KeybayShownSecret) throws { try inner.showSecret(secret) }

    func chooseMethod(_ methods: [KeybayMethod]) throws -> String { try inner.chooseMethod(methods) }

    func mayAskAgain(after failure: KeybayError) -> Bool { inner.mayAskAgain(after: failure) }

    var isCancelled: Bool { inner.isCancelled }

    var logLevel: KeybayLogLevel { inner.logLevel }

    func log(_ text: String, level: KeybayLogLevel) { inner.log(text, level: level) }

    func log(_ text: String) { inner.log(text) }
}
