// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Testing
@testable import Keybay

/// The resolver every API call obtains its methods from: it finds a method plugin on the search
/// it is given and serves its ceremonies, and refuses what the loader refuses, with the loader's
/// codes and reasons.
@Suite struct MethodResolverTests {
    static let testSearch = KeybayPluginSearch(directories: [testPluginDirectory], environmentPath: nil)

    /// test-counting's M is HMAC(salt, PIN): enroll, unwrap and verify give the same bytes for the
    /// same PIN and others for another.
    @Test func aMethodOnTheSearchPathIsResolvedAndServesItsCeremonies() throws {
        let method = try MethodResolver(search: Self.testSearch).method("test-counting")
        #expect(method.id == "test-counting" && !method.needsDevice && !method.isOnePerStore && !method.calibrates)
        #expect(method.probe() == nil)
        let (params, enrolled, grants) = try method.enroll(options: [], interaction: ScriptedInteraction(["1234", "1234"]), about: .none)
        #expect(params.count == 20 && Array(params.prefix(4)) == Array("TCNT".utf8) && grants.isEmpty)
        let unwrapped = try method.unwrap(params: params, interaction: ScriptedInteraction(["1234"]), about: .none)
        let verified = try method.verify(params: params, interaction: ScriptedInteraction(["1234"]), about: .none)
        let other = try method.unwrap(params: params, interaction: ScriptedInteraction(["4321"]), about: .none)
        #expect(enrolled.count == 32 && unwrapped.equals(enrolled) && verified.equals(enrolled) && !other.equals(enrolled))
        #expect(try method.describe(params: params) == "counting test method")
    }

    /// An unknown id, an invalid one and a root plugin asked for as a method are refused with the
    /// codes the loader gives them.
    @Test func whatTheLoaderRefusesTheResolverRefusesTheSameWay() throws {
        let unknown = keybayError { _ = try MethodResolver(search: Self.testSearch).method("no-such-method") }
        #expect(unknown?.code == .pluginNotFound && unknown?.pluginID == "no-such-method", "\(String(describing: unknown))")
        let invalid = keybayError { _ = try MethodResolver(search: Self.testSearch).method("../evil") }
        #expect(invalid?.code == .invalidArgument && invalid?.reason == "invalid-plugin-id", "\(String(describing: invalid))")
        let inProcess = KeybayPluginSearch(directories: [pluginDirectory], environmentPath: nil, isolation: .inProcess)
        let root = keybayError { _ = try MethodResolver(search: inProcess).method("file-root") }
        #expect(root?.code == .pluginRefused && root?.reason == "wrong-kind", "\(String(describing: root))")
        let isolated = KeybayPluginSearch(directories: [pluginDirectory], environmentPath: nil, isolation: .isolated)
        let rootIsolated = keybayError { _ = try MethodResolver(search: isolated).method("file-root") }
        #expect(rootIsolated?.code == .pluginFailed && rootIsolated?.reason == "kind-mismatch", "\(String(describing: rootIsolated))")
    }

    /// The API's methods come from the configuration's search: a store whose configuration does
    /// not name the test plugins' directory cannot enroll one of them.
    @Test func theAPIResolvesMethodsOnItsConfigurationsSearch() throws {
        let box = Sandbox()
        var configuration = try box.configuration()
        #expect(configuration.methodResolver.search == configuration.pluginSearch)
        let session = try KeybayStore.open(configuration)
        defer { session.close() }
        let found = try session.auth.prepare(plugin: "test-counting", interaction: ScriptedInteraction(["1234", "1234"]))
        found.discard()
        configuration.pluginSearch.directories = []
        configuration.pluginSearch.environmentPath = nil
        let elsewhere = try KeybayStore.open(configuration)
        defer { elsewhere.close() }
        let missing = keybayError { _ = try elsewhere.auth.prepare(plugin: "test-counting", interaction: ScriptedInteraction(["1234", "1234"])) }
        #expect(missing?.code == .pluginNotFound && missing?.pluginID == "test-counting", "\(String(describing: missing))")
    }
}
