/// The firewall check: reads the rules of nftables, iptables, firewalld and ufw (whichever are installed and
/// readable) and looks for what drops mDNS (5353/udp) or our TCP listener.
///
/// A heuristic, not a packet simulator: an input chain whose policy drops with no rule that accepts 5353/udp, or a
/// rule that drops or rejects 5353/udp, is reported. The TCP port `nearby` listens on is chosen by the system
/// unless `--port` fixes it; with an input policy that drops, that port must be opened too.
enum DoctorFirewallCheck {
    /// What one tool said.
    struct Finding: Equatable {
        var tool: String
        var blocksMDNS: Bool
        /// The input policy drops (or rejects) what no rule accepts: our TCP port is blocked unless opened.
        var dropsByDefault: Bool
        var note: String
    }

    static func run(environment: DoctorEnvironment) -> DoctorCheck {
        var findings: [Finding] = []
        var unreadable: [String] = []
        var installed = false

        if let (status, output) = environment.run("nft", ["list", "ruleset"]) {
            installed = true
            if status == 0 { findings.append(nftables(output)) } else { unreadable.append("nft (\(firstLine(output)))") }
        }
        if let (status, output) = environment.run("iptables", ["-S", "INPUT"]) {
            installed = true
            if status == 0 { findings.append(iptables(output)) } else { unreadable.append("iptables (\(firstLine(output)))") }
        }
        if let (status, output) = environment.run("firewall-cmd", ["--state"]) {
            installed = true
            if status == 0, output.contains("running") {
                let services = environment.run("firewall-cmd", ["--list-all"])?.output ?? ""
                findings.append(firewalld(services))
            }
        }
        if let (status, output) = environment.run("ufw", ["status"]) {
            installed = true
            if status == 0 { findings.append(ufw(output)) } else { unreadable.append("ufw (\(firstLine(output)))") }
        }

        let blocking = findings.filter(\.blocksMDNS)
        let dropping = findings.filter(\.dropsByDefault)
        let details = findings.map { "\($0.tool): \($0.note)" } + unreadable.map { "could not read \($0)" }
        if !blocking.isEmpty {
            return DoctorCheck(
                check: "firewall", status: .fail,
                summary: "\(blocking.map(\.tool).joined(separator: ", ")) drops mDNS (5353/udp): nearby devices cannot find each other",
                details: details,
                fix: fixText(blocking.map(\.tool)))
        }
        if !dropping.isEmpty {
            return DoctorCheck(
                check: "firewall", status: .warn,
                summary: "incoming connections are dropped unless allowed: mDNS is allowed, our TCP port may not be",
                details: details,
                fix: "run `nearby advertise|receive --port N` with a fixed port and open N/tcp in "
                    + dropping.map(\.tool).joined(separator: ", "))
        }
        if !unreadable.isEmpty && findings.isEmpty {
            return DoctorCheck(
                check: "firewall", status: .skip, summary: "the firewall rules cannot be read without root",
                details: details, fix: "run `sudo nearby doctor` to check them")
        }
        if !installed {
            return DoctorCheck(check: "firewall", status: .ok, summary: "no firewall tool installed (nft, iptables, firewalld, ufw)")
        }
        return DoctorCheck(
            check: "firewall", status: .ok, summary: "nothing drops mDNS (5353/udp) or incoming TCP", details: details)
    }

    private static func fixText(_ tools: [String]) -> String {
        var fixes: [String] = []
        for tool in tools {
            switch tool {
            case "nftables": fixes.append("nft add rule inet filter input udp dport 5353 accept")
            case "iptables": fixes.append("iptables -I INPUT -p udp --dport 5353 -j ACCEPT")
            case "firewalld": fixes.append("firewall-cmd --permanent --add-service=mdns && firewall-cmd --reload")
            case "ufw": fixes.append("ufw allow 5353/udp")
            default: break
            }
        }
        return fixes.joined(separator: "; ") + " (as root; then open the TCP port of `--port N` the same way)"
    }

    private static func firstLine(_ text: String) -> String {
        String(text.split(separator: "\n").first ?? "failed").trimmingCharacters(in: .whitespaces)
    }

    // MARK: - Parsers (pure, tested on sample rule sets)

    /// `nft list ruleset`: input chains (`hook input`), their policy, and rules about 5353/udp.
    static func nftables(_ ruleset: String) -> Finding {
        var inInput = false
        var dropPolicy = false
        var accepts5353 = false
        var drops5353 = false
        for raw in ruleset.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("chain ") { inInput = false }
            if line.contains("hook input") {
                inInput = true
                if line.contains("policy drop") || line.contains("policy reject") { dropPolicy = true }
                continue
            }
            guard inInput else { continue }
            let mdns = line.contains("dport 5353") || line.contains("dport mdns")
                || line.contains("dport { ") && line.contains("5353")
            if mdns && line.contains("accept") { accepts5353 = true }
            if mdns && (line.contains("drop") || line.contains("reject")) { drops5353 = true }
        }
        let blocks = drops5353 || (dropPolicy && !accepts5353)
        let note =
            drops5353 ? "a rule drops 5353/udp"
            : dropPolicy ? (accepts5353 ? "input policy drops; 5353/udp is accepted" : "input policy drops and nothing accepts 5353/udp")
            : "input accepts by default"
        return Finding(tool: "nftables", blocksMDNS: blocks, dropsByDefault: dropPolicy, note: note)
    }

    /// `iptables -S INPUT`: the policy line and rules about 5353.
    static func iptables(_ rules: String) -> Finding {
        var dropPolicy = false
        var accepts5353 = false
        var drops5353 = false
        for raw in rules.split(separator: "\n") {
            let line = String(raw)
            if line.hasPrefix("-P INPUT") { dropPolicy = line.contains("DROP") || line.contains("REJECT") }
            guard line.hasPrefix("-A INPUT") else { continue }
            let mdns = line.contains("--dport 5353") || line.contains("--dports 5353") || line.contains(",5353")
            if mdns && line.contains("-j ACCEPT") { accepts5353 = true }
            if mdns && (line.contains("-j DROP") || line.contains("-j REJECT")) { drops5353 = true }
            if line == "-A INPUT -j DROP" || line == "-A INPUT -j REJECT" { dropPolicy = true }
        }
        let blocks = drops5353 || (dropPolicy && !accepts5353)
        let note =
            drops5353 ? "a rule drops 5353/udp"
            : dropPolicy ? (accepts5353 ? "INPUT drops by default; 5353/udp is accepted" : "INPUT drops by default and nothing accepts 5353/udp")
            : "INPUT accepts by default"
        return Finding(tool: "iptables", blocksMDNS: blocks, dropsByDefault: dropPolicy, note: note)
    }

    /// `firewall-cmd --list-all` of the default zone: is the `mdns` service (or 5353/udp) allowed.
    static func firewalld(_ zone: String) -> Finding {
        let allowed = zone.split(separator: "\n").contains { line in
            let text = line.trimmingCharacters(in: .whitespaces)
            return (text.hasPrefix("services:") && text.split(separator: " ").contains("mdns"))
                || (text.hasPrefix("ports:") && text.contains("5353/udp"))
        }
        return Finding(
            tool: "firewalld", blocksMDNS: !allowed, dropsByDefault: true,
            note: allowed ? "the zone allows mdns" : "the default zone does not allow the mdns service")
    }

    /// `ufw status`: active, and is 5353/udp allowed.
    static func ufw(_ status: String) -> Finding {
        guard status.contains("Status: active") else {
            return Finding(tool: "ufw", blocksMDNS: false, dropsByDefault: false, note: "inactive")
        }
        let allowed = status.split(separator: "\n").contains { line in
            (line.contains("5353") || line.lowercased().contains("mdns")) && line.contains("ALLOW")
        }
        return Finding(
            tool: "ufw", blocksMDNS: !allowed, dropsByDefault: true,
            note: allowed ? "active; 5353/udp allowed" : "active; 5353/udp not allowed")
    }
}
