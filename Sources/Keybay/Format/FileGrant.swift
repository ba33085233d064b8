// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A file the host opens for a method (open_file): the enroll option that named it and the
/// absolute path the user gave there. Recorded at enrollment in the method's envelope
/// (docs/format.md §10.1), which the root seals with the rest of the package, so a plugin cannot
/// change it; at unlock the host opens only this.
struct FileGrant: Sendable, Equatable {
    let option: String
    let path: String

    /// At most this many grants per method, whose encoding (`LP(option) | LP(path)` each) takes at
    /// most `maxBytes`.
    static let maxCount = 8
    static let maxBytes = 4096
    /// A path is absolute and shorter than PATH_MAX.
    static let maxPathBytes = Int(PATH_MAX) - 1

    /// Whether the format accepts it: an option named by the plugin-id grammar, an absolute path.
    var isWellFormed: Bool {
        MethodNames.isValidPluginID(option) && path.hasPrefix("/") && (2...Self.maxPathBytes).contains(path.utf8.count) && !path.utf8.contains(0)
    }

    /// The bytes a list of grants takes in an envelope.
    static func encodedBytes(_ grants: [FileGrant]) -> Int {
        grants.reduce(0) { $0 + 8 + $1.option.utf8.count + $1.path.utf8.count }
    }
}
