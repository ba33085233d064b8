// SPDX-License-Identifier: Apache-2.0

/// `--for DURATION`: whole seconds (`90`), or a number with `s`, `m`, `h` or `d` (`90s`, `15m`,
/// `2h`, `1d`); `0` holds the store until `lock` or logout. At most a year.
enum AgentDuration {
    static let maxSeconds: UInt64 = 366 * 86400

    static func seconds(_ text: String) throws -> UInt64 {
        let units: [Character: UInt64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var digits = Substring(text), unit: UInt64 = 1
        if let last = text.last, let factor = units[last] {
            digits = digits.dropLast()
            unit = factor
        }
        guard !digits.isEmpty, digits.utf8.count <= 12, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = UInt64(digits),
              n.multipliedReportingOverflow(by: unit).partialValue <= maxSeconds else {
            throw Arguments.UsageError(message: "--for takes a duration: seconds, or a number with s, m, h or d (90s, 15m, 2h), at most 366d; 0 until lock")
        }
        return n * unit
    }
}
