import Foundation
import Testing

@testable import nearby

/// `nearby doctor`'s readings of firewall rules and interfaces, on sample inputs.
@Suite(.timeLimit(.minutes(1)))
struct DoctorParserTests {
    static let nftDropping = """
        table inet filter {
        \tchain input {
        \t\ttype filter hook input priority filter; policy drop;
        \t\tct state established,related accept
        \t\tiif "lo" accept
        \t\ttcp dport 22 accept
        \t}
        \tchain output {
        \t\ttype filter hook output priority filter; policy accept;
        \t\tudp dport 5353 drop
        \t}
        }
        """

    @Test("nftables: an input policy that drops with nothing accepting 5353/udp blocks mDNS")
    func nftDrop() {
        let finding = DoctorFirewallCheck.nftables(Self.nftDropping)
        #expect(finding.blocksMDNS)
        #expect(finding.dropsByDefault)
        // The output chain's rule is not an input rule.
        let allowed = Self.nftDropping.replacingOccurrences(of: "tcp dport 22 accept", with: "udp dport 5353 accept")
        let open = DoctorFirewallCheck.nftables(allowed)
        #expect(!open.blocksMDNS)
        #expect(open.dropsByDefault)
        #expect(!DoctorFirewallCheck.nftables("table inet filter {\n chain input {\n type filter hook input priority 0; policy accept;\n }\n}").blocksMDNS)
        #expect(DoctorFirewallCheck.nftables("chain input {\n type filter hook input priority 0; policy accept;\n udp dport mdns drop\n }").blocksMDNS)
    }

    @Test("iptables: policy and rules about 5353")
    func iptables() {
        #expect(DoctorFirewallCheck.iptables("-P INPUT DROP\n-A INPUT -p tcp --dport 22 -j ACCEPT").blocksMDNS)
        #expect(!DoctorFirewallCheck.iptables("-P INPUT DROP\n-A INPUT -p udp -m udp --dport 5353 -j ACCEPT").blocksMDNS)
        #expect(DoctorFirewallCheck.iptables("-P INPUT ACCEPT\n-A INPUT -p udp --dport 5353 -j DROP").blocksMDNS)
        #expect(!DoctorFirewallCheck.iptables("-P INPUT ACCEPT").blocksMDNS)
        #expect(DoctorFirewallCheck.iptables("-P INPUT ACCEPT\n-A INPUT -j REJECT").dropsByDefault)
    }

    @Test("firewalld and ufw")
    func firewalldAndUfw() {
        #expect(DoctorFirewallCheck.firewalld("public (active)\n  services: dhcpv6-client ssh\n  ports: \n").blocksMDNS)
        #expect(!DoctorFirewallCheck.firewalld("public (active)\n  services: dhcpv6-client mdns ssh\n").blocksMDNS)
        #expect(!DoctorFirewallCheck.ufw("Status: inactive").blocksMDNS)
        #expect(DoctorFirewallCheck.ufw("Status: active\n\nTo Action From\n22/tcp ALLOW Anywhere").blocksMDNS)
        #expect(!DoctorFirewallCheck.ufw("Status: active\n\nTo Action From\n5353/udp ALLOW Anywhere").blocksMDNS)
    }

    static func interface(
        _ name: String, _ kind: NetworkInterface.Kind, up: Bool = true, multicast: Bool = true, ipv4: [String] = []
    ) -> NetworkInterface {
        NetworkInterface(name: name, up: up, multicast: multicast, kind: kind, ipv4: ipv4, ipv6: [])
    }

    @Test("interfaces: a LAN is fine; VPN and container links are named; multicast off is a warning")
    func interfaces() {
        let loopback = Self.interface("lo", .loopback, ipv4: ["127.0.0.1"])
        let wifi = Self.interface("wlan0", .wireless, ipv4: ["192.168.1.20"])
        #expect(DoctorInterfacesCheck.run([loopback, wifi]).status == .ok)
        let docker = Self.interface("docker0", .container, ipv4: ["172.17.0.1"])
        let vpn = Self.interface("wg0", .vpn, ipv4: ["10.8.0.2"])
        let crowded = DoctorInterfacesCheck.run([loopback, wifi, docker, vpn])
        #expect(crowded.status == .warn)
        #expect(crowded.summary.contains("docker0 (container)") && crowded.summary.contains("wg0 (vpn)"))
        #expect(crowded.fix?.contains("allow-interfaces=wlan0") == true)
        let deaf = DoctorInterfacesCheck.run([loopback, Self.interface("eth0", .ethernet, multicast: false, ipv4: ["10.0.0.5"])])
        #expect(deaf.status == .warn)
        #expect(deaf.fix?.contains("ip link set dev eth0 multicast on") == true)
        let alone = DoctorInterfacesCheck.run([loopback])
        #expect(alone.status == .fail)
    }

    @Test("a check's human form: tag, name, summary, details, fix")
    func render() {
        let check = DoctorCheck(
            check: "avahi", status: .fail, summary: "avahi-daemon is not running", details: ["nothing owns it"],
            fix: "sudo systemctl enable --now avahi-daemon")
        #expect(check.render() == """
            [FAIL] avahi           avahi-daemon is not running
                     nothing owns it
                     fix: sudo systemctl enable --now avahi-daemon
            """)
    }
}
