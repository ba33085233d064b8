// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Enough of stat(2) to tell that a file was replaced (every write renames a new inode in).
struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modifiedSeconds: Int
    let modifiedNanoseconds: Int
    let changedSeconds: Int
    let changedNanoseconds: Int

    /// The identity of no file: a generation known only from memory compares unequal to the
    /// file on disk, which is then read again.
    static let unknown = FileIdentity(stat())

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modifiedSeconds = Int(st.st_mtim.tv_sec)
        modifiedNanoseconds = Int(st.st_mtim.tv_nsec)
        changedSeconds = Int(st.st_ctim.tv_sec)
        changedNanoseconds = Int(st.st_ctim.tv_nsec)
    }
}
