// SPDX-License-Identifier: Apache-2.0
/// What `root move` did: the root the store is on now, and the old root if it could not be
/// removed (the store has moved all the same; remove it by hand).
public struct KeybayRootMove: Sendable, Equatable {
    /// The new root's plugin id (`auto` resolved).
    public let rootPlugin: String
    /// Where the new root keeps its key (a path, a keyring item).
    public let rootLocation: String
    /// The old root's location when it could not be removed, else nil.
    public let oldRootLeftAt: String?
}
