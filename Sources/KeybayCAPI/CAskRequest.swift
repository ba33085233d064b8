// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Keybay

/// A secret request as the `keybay_ask_request` a host's `ask` gets, its strings alive for the call.
enum CAskRequest {
    static func with<T>(_ request: KeybaySecretRequest, _ body: (UnsafePointer<keybay_ask_request>) -> T) -> T {
        let kind: keybay_ask_kind = !request.isNew ? KEYBAY_ASK_SECRET : request.isConfirmation ? KEYBAY_ASK_CONFIRM_NEW_SECRET : KEYBAY_ASK_NEW_SECRET
        return withOptionalCString(request.methodID) { methodID in
            withOptionalCString(request.pluginID) { pluginID in
                withOptionalCString(request.label) { label in
                    withOptionalCString(request.application) { application in
                        request.kind.displayName.withCString { secretKind in
                            request.prompt.withCString { prompt in
                                var asked = keybay_ask_request()
                                asked.struct_size = UInt32(MemoryLayout<keybay_ask_request>.size)
                                asked.kind = kind
                                asked.secret_kind = secretKind
                                asked.prompt = prompt
                                asked.method_id = methodID
                                asked.plugin_id = pluginID
                                asked.label = label
                                asked.app_id = application
                                asked.tries_left = request.retriesLeft.map { Int32(clamping: $0) } ?? -1
                                asked.is_retry = request.isRetry ? 1 : 0
                                return withUnsafePointer(to: &asked) { body($0) }
                            }
                        }
                    }
                }
            }
        }
    }

    private static func withOptionalCString<T>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
        guard let text else { return body(nil) }
        return text.withCString { body($0) }
    }
}
