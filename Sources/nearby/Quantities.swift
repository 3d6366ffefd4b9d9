import Foundation

/// Sizes, rates and durations as people read them: decimal units (1 MB = 1,000,000 bytes, as `ls -h --si`,
/// croc and most file managers show them), one decimal, no locale.
enum Quantities {
    /// `512 B`, `2.0 kB`, `200.0 MB`, `1.5 GB`.
    static func size(_ bytes: Int64) -> String {
        let value = Double(bytes)
        if bytes >= 1_000_000_000_000 { return String(format: "%.1f TB", value / 1e12) }
        if bytes >= 1_000_000_000 { return String(format: "%.1f GB", value / 1e9) }
        if bytes >= 1_000_000 { return String(format: "%.1f MB", value / 1e6) }
        if bytes >= 1_000 { return String(format: "%.1f kB", value / 1e3) }
        return "\(bytes) B"
    }

    /// Two sizes in the unit of the larger: `84.0/200.0 MB`.
    static func sizePair(_ done: Int64, of total: Int64) -> String {
        let (divisor, unit): (Double, String) =
            switch total {
            case 1_000_000_000_000...: (1e12, "TB")
            case 1_000_000_000...: (1e9, "GB")
            case 1_000_000...: (1e6, "MB")
            case 1_000...: (1e3, "kB")
            default: (1, "B")
            }
        if divisor == 1 { return "\(done)/\(total) B" }
        return String(format: "%.1f/%.1f %@", Double(done) / divisor, Double(total) / divisor, unit)
    }

    /// `95.3 MB/s`.
    static func rate(_ bytesPerSecond: Double) -> String {
        size(Int64(bytesPerSecond.isFinite ? max(0, bytesPerSecond) : 0)) + "/s"
    }

    /// `0:07`, `12:34`, `1:02:03`.
    static func clock(_ seconds: Double) -> String {
        let total = Int(max(0, seconds.isFinite ? seconds.rounded(.up) : 0))
        let (hours, minutes, rest) = (total / 3600, (total / 60) % 60, total % 60)
        if hours > 0 { return String(format: "%d:%02d:%02d", hours, minutes, rest) }
        return String(format: "%d:%02d", minutes, rest)
    }

    /// `0.4 s`, `12.3 s`, `2:05` (a duration for a summary line).
    static func duration(_ seconds: Double) -> String {
        seconds < 60 ? String(format: "%.1f s", max(0, seconds)) : clock(seconds)
    }
}
