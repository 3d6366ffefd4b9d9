/// Scan timing: interval and window in 0.625 ms units.
package struct ScanPreset: Sendable, Hashable {
    /// Time between the starts of two scan windows (0.625 ms units).
    package var interval: UInt16
    /// How long each scan window lasts (0.625 ms units, ≤ interval).
    package var window: UInt16
    /// Active scanning (scan requests) rather than passive.
    package var active: Bool

    /// Creates a preset.
    package init(interval: UInt16, window: UInt16, active: Bool = false) {
        self.interval = interval
        self.window = min(window, interval)
        self.active = active
    }

    /// Low power: a 11.25 ms window every 1.28 s.
    package static let lowPower = ScanPreset(interval: 0x0800, window: 0x0012)
    /// Low latency: scanning all the time (60 ms interval and window).
    package static let lowLatency = ScanPreset(interval: 0x0060, window: 0x0060)
}
