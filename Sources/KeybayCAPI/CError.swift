// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Glibc
import Keybay

/// What a `keybay_error *` points to: the code, its name and the fields, as C strings the
/// error owns until `keybay_error_free`.
// Immutable once made; its strings are freed only in deinit, so sharing it is safe.
final class CError: @unchecked Sendable {
    let code: Int32
    let name: UnsafeMutablePointer<CChar>
    let message: UnsafeMutablePointer<CChar>
    let path: UnsafeMutablePointer<CChar>?
    let pluginID: UnsafeMutablePointer<CChar>?
    let methodID: UnsafeMutablePointer<CChar>?
    let reason: UnsafeMutablePointer<CChar>?
    /// -1 when unknown.
    let triesLeft: Int32
    let tookEffect: Bool
    /// The methods an `.authenticationRequired` open lists, for `keybay_error_methods`.
    let methods: CMethodList?

    init(code: Int32, name: String, message: String, path: String? = nil, pluginID: String? = nil, methodID: String? = nil,
         reason: String? = nil, triesLeft: Int? = nil, tookEffect: Bool = false, methods: [KeybayMethod]? = nil) {
        self.code = code
        self.name = strdup(name)
        self.message = strdup(message)
        self.path = path.map { strdup($0) }
        self.pluginID = pluginID.map { strdup($0) }
        self.methodID = methodID.map { strdup($0) }
        self.reason = reason.map { strdup($0) }
        self.triesLeft = triesLeft.map { Int32(clamping: $0) } ?? -1
        self.tookEffect = tookEffect
        self.methods = methods.map(CMethodList.init)
    }

    /// `e` as a C error; `methodID` names the method when `e` does not.
    convenience init(_ e: KeybayError, methodID: String? = nil) {
        self.init(code: ErrorCodes.numbers[e.code] ?? KEYBAY_ERR_PLUGIN_FAILED.number, name: e.code.rawValue, message: e.message, path: e.path,
                  pluginID: e.pluginID, methodID: e.methodID ?? methodID, reason: e.reason, triesLeft: e.triesLeft,
                  tookEffect: e.tookEffect, methods: e.methods)
    }

    deinit {
        for p in [name, message, path, pluginID, methodID, reason] { free(p) }
    }

    /// A `keybay_error *` the caller owns.
    var handle: OpaquePointer { OpaquePointer(Unmanaged.passRetained(self).toOpaque()) }

    static func from(_ handle: OpaquePointer?) -> CError? {
        handle.map { Unmanaged<CError>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
    }
}

/// The error a bad argument gives.
func invalidArgument(_ what: String) -> KeybayError { KeybayError(.invalidArgument, what) }

/// Runs `body`; a failure becomes its code, with `*err` set when `err` is given. Anything but a
/// `KeybayError` (none is expected) is `plugin-failed` naming it, never a crash.
func reporting(_ err: UnsafeMutablePointer<OpaquePointer?>?, _ body: () throws -> Void) -> Int32 {
    do {
        try body()
        return 0
    } catch let e as CAPIFailure {
        err?.pointee = e.error.handle
        return e.error.code
    } catch let e as KeybayError {
        let error = CError(e)
        err?.pointee = error.handle
        return error.code
    } catch {
        let e = CError(KeybayError(.pluginFailed, "unexpected failure: \(error)"))
        err?.pointee = e.handle
        return e.code
    }
}

/// A failure of the C API's own (KEYBAY_ERR_NOT_FOUND), thrown inside `reporting`.
struct CAPIFailure: Error {
    let error: CError

    static func notFound(_ key: String, in path: String) -> CAPIFailure {
        CAPIFailure(error: CError(code: KEYBAY_ERR_NOT_FOUND.number, name: ErrorCodes.notFoundName, message: "no record '\(key)' in \(path)", path: path))
    }
}

@_cdecl("keybay_error_code")
public func keybay_error_code(_ error: OpaquePointer?) -> Int32 { CError.from(error)?.code ?? KEYBAY_ERR_INVALID_ARGUMENT.number }

@_cdecl("keybay_error_name")
public func keybay_error_name(_ error: OpaquePointer?) -> UnsafePointer<CChar>? { CError.from(error).map { UnsafePointer($0.name) } }

@_cdecl("keybay_error_message")
public func keybay_error_message(_ error: OpaquePointer?) -> UnsafePointer<CChar>? { CError.from(error).map { UnsafePointer($0.message) } }

@_cdecl("keybay_error_path")
public func keybay_error_path(_ error: OpaquePointer?) -> UnsafePointer<CChar>? { CError.from(error)?.path.map { UnsafePointer($0) } }

@_cdecl("keybay_error_plugin_id")
public func keybay_error_plugin_id(_ error: OpaquePointer?) -> UnsafePointer<CChar>? { CError.from(error)?.pluginID.map { UnsafePointer($0) } }

@_cdecl("keybay_error_method_id")
public func keybay_error_method_id(_ error: OpaquePointer?) -> UnsafePointer<CChar>? { CError.from(error)?.methodID.map { UnsafePointer($0) } }

@_cdecl("keybay_error_reason")
public func keybay_error_reason(_ error: OpaquePointer?) -> UnsafePointer<CChar>? { CError.from(error)?.reason.map { UnsafePointer($0) } }

@_cdecl("keybay_error_tries_left")
public func keybay_error_tries_left(_ error: OpaquePointer?) -> Int32 { CError.from(error)?.triesLeft ?? -1 }

@_cdecl("keybay_error_took_effect")
public func keybay_error_took_effect(_ error: OpaquePointer?) -> Int32 { CError.from(error)?.tookEffect == true ? 1 : 0 }

@_cdecl("keybay_error_methods")
public func keybay_error_methods(_ error: OpaquePointer?, _ count: UnsafeMutablePointer<Int>?) -> UnsafePointer<keybay_method_info>? {
    let list = CError.from(error)?.methods
    count?.pointee = list?.count ?? 0
    return list.map { UnsafePointer($0.entries) }
}

@_cdecl("keybay_error_free")
public func keybay_error_free(_ error: OpaquePointer?) {
    guard let error else { return }
    Unmanaged<CError>.fromOpaque(UnsafeRawPointer(error)).release()
}

/// The names, as C strings that live as long as the library.
nonisolated(unsafe) private let codeNames: [Int32: UnsafeMutablePointer<CChar>] = ErrorCodes.names.mapValues { strdup($0) }

@_cdecl("keybay_code_name")
public func keybay_code_name(_ code: Int32) -> UnsafePointer<CChar>? { codeNames[code].map { UnsafePointer($0) } }
