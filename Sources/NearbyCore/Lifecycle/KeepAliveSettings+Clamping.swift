extension KeepAliveSettings {
    /// These settings with the timeout clamped into `range` (peers choose their keep-alive timeout in their
    /// connection request; a huge one would let a silent peer hold an endpoint for hours, a tiny one would make us
    /// drop it on the first hiccup). When the interval is no longer below the clamped timeout it becomes half of
    /// it.
    public func clamped(timeoutTo range: ClosedRange<Duration>) -> KeepAliveSettings {
        let timeout = min(max(self.timeout, range.lowerBound), range.upperBound)
        guard timeout != self.timeout else { return self }
        let interval = self.interval < timeout ? self.interval : timeout / 2
        return KeepAliveSettings(interval: interval, timeout: timeout)
    }
}
