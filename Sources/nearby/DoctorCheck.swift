/// One finding of `nearby doctor`: what was checked, how it stands, what was seen, and how to fix it.
struct DoctorCheck: Sendable, Encodable, Equatable {
    /// How a check came out.
    enum Status: String, Sendable, Encodable {
        /// Fine.
        case ok
        /// Works, but may explain a missing peer (a firewall rule, a VPN interface).
        case warn
        /// Broken: this stops nearby from working on that medium.
        case fail
        /// Could not be checked (not allowed, tool missing) or does not apply.
        case skip
    }

    /// A short stable name for scripts: `avahi`, `mdns`, `firewall`, `interfaces`, `bluez`, `rfkill`,
    /// `hci-permissions`, `audio`, `config`, `receive-dir`.
    var check: String
    var status: Status
    /// One line: what was found.
    var summary: String
    /// More lines: the evidence (an interface each, a rule, an adapter).
    var details: [String] = []
    /// What to do about it, when the status is not ok.
    var fix: String?

    /// The human form: a status tag, the check, the summary, then indented details and the fix.
    func render() -> String {
        renderedLines().joined(separator: "\n")
    }

    /// ``render()``, line by line.
    func renderedLines() -> [String] {
        let tag =
            switch status {
            case .ok: "[ ok ]"
            case .warn: "[warn]"
            case .fail: "[FAIL]"
            case .skip: "[skip]"
            }
        var lines = ["\(tag) \(DisplayWidth.padded(check, to: 15)) \(summary)"]
        lines += details.map { "         \($0)" }
        if let fix { lines.append("         fix: \(fix)") }
        return lines
    }
}
