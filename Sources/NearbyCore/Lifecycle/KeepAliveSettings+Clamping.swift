extension KeepAliveSettings {
    /// The shortest keep-alive interval we follow, whatever a peer asks for.
    package static let minimumPeerInterval: Duration = .milliseconds(100)

    /// These settings with the timeout clamped into `range` (peers choose their keep-alive timeout in their
    /// connection request; a huge one would let a silent peer hold an endpoint for hours, a tiny one would make us
    /// drop it on the first hiccup). The interval is kept below the clamped timeout (half of it when it was not)
    /// and at least ``minimumPeerInterval``, so a peer cannot make us send a keep-alive every millisecond.
    package func clamped(timeoutTo range: ClosedRange<Duration>) -> KeepAliveSettings {
        let timeout = min(max(self.timeout, range.lowerBound), range.upperBound)
        var interval = self.interval < timeout ? self.interval : timeout / 2
        if interval < Self.minimumPeerInterval { interval = min(Self.minimumPeerInterval, timeout / 2) }
        guard timeout != self.timeout || interval != self.interval else { return self }
        return KeepAliveSettings(interval: interval, timeout: timeout)
    }
}
