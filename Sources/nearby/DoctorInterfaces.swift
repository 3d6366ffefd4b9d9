import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A network interface as `nearby doctor` sees it.
struct NetworkInterface: Sendable, Equatable {
    /// What kind of link it is, from sysfs and its name.
    enum Kind: String, Sendable {
        case loopback, wireless, ethernet, bridge, container, vpn, virtual
    }

    var name: String
    var up: Bool
    var multicast: Bool
    var kind: Kind
    var ipv4: [String]
    var ipv6: [String]

    /// Whether peers on the LAN can reach us through it (a physical link, up, with an IPv4 address).
    var isLAN: Bool { up && (kind == .wireless || kind == .ethernet) && !ipv4.isEmpty }

    /// Every interface with its flags and addresses (`getifaddrs`), its kind from `sysfs`.
    static func all(environment: DoctorEnvironment) -> [NetworkInterface] {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return [] }
        defer { freeifaddrs(first) }
        var byName: [String: NetworkInterface] = [:]
        var order: [String] = []
        var cursor = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            let name = String(cString: entry.pointee.ifa_name)
            let flags = Int32(bitPattern: entry.pointee.ifa_flags)
            if byName[name] == nil {
                order.append(name)
                byName[name] = NetworkInterface(
                    name: name, up: flags & Int32(IFF_UP) != 0 && flags & Int32(IFF_RUNNING) != 0,
                    multicast: flags & Int32(IFF_MULTICAST) != 0,
                    kind: kind(of: name, loopback: flags & Int32(IFF_LOOPBACK) != 0, environment: environment),
                    ipv4: [], ipv6: [])
            }
            guard let address = entry.pointee.ifa_addr else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                if let text = numericHost(address, length: socklen_t(MemoryLayout<sockaddr_in>.size)) {
                    byName[name]?.ipv4.append(text)
                }
            case AF_INET6:
                if let text = numericHost(address, length: socklen_t(MemoryLayout<sockaddr_in6>.size)) {
                    byName[name]?.ipv6.append(text)
                }
            default:
                break
            }
        }
        return order.compactMap { byName[$0] }
    }

    private static func numericHost(_ address: UnsafeMutablePointer<sockaddr>, length: socklen_t) -> String? {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The kind of `name`: sysfs says wireless (`wireless/`), bridge (`bridge/`), tun/tap (`tun_flags`), Ethernet
    /// (a `device` link) or virtual (none); names say container (docker, veth, virbr, …) and VPN (wg, tun,
    /// tailscale, …) links.
    static func kind(of name: String, loopback: Bool, environment: DoctorEnvironment) -> Kind {
        if loopback { return .loopback }
        let base = environment.sysfs + "/class/net/" + name
        let containerPrefixes = ["docker", "br-", "veth", "virbr", "vboxnet", "vmnet", "lxcbr", "lxdbr", "cni", "podman", "flannel", "cali"]
        let vpnPrefixes = ["wg", "tun", "tap", "tailscale", "zt", "ppp", "nordlynx", "proton", "utun", "ipsec"]
        if containerPrefixes.contains(where: name.hasPrefix) { return .container }
        if vpnPrefixes.contains(where: name.hasPrefix) || environment.exists(base + "/tun_flags") { return .vpn }
        if environment.exists(base + "/wireless") || environment.exists(base + "/phy80211") { return .wireless }
        if environment.exists(base + "/bridge") { return .bridge }
        // A physical NIC has a `device` link; veth, dummy and the like do not. An interface sysfs does not list
        // (another network namespace) cannot be told apart: it counts as virtual.
        return environment.exists(base + "/device") ? .ethernet : .virtual
    }
}

/// The interfaces check: is there a LAN interface, is multicast on where it must be, and which VPN, container or
/// bridge links would also carry our mDNS records and upgrade offers.
enum DoctorInterfacesCheck {
    static func run(_ interfaces: [NetworkInterface]) -> DoctorCheck {
        var details: [String] = []
        var fixes: [String] = []
        var status = DoctorCheck.Status.ok
        for interface in interfaces {
            let addresses = (interface.ipv4 + interface.ipv6.filter { !$0.hasPrefix("fe80") }).joined(separator: ", ")
            var line = "\(interface.name): \(interface.kind.rawValue), \(interface.up ? "up" : "down")"
            line += interface.multicast ? ", multicast" : ", NO multicast"
            if !addresses.isEmpty { line += ", \(addresses)" }
            if interface.up && !interface.multicast && interface.kind != .loopback {
                status = .warn
                line += " (mDNS cannot work here)"
                fixes.append("sudo ip link set dev \(interface.name) multicast on")
            }
            if interface.up && !interface.ipv4.isEmpty && [.container, .vpn, .bridge, .virtual].contains(interface.kind) {
                line += " (mDNS is answered here too, and upgrades offer its address)"
            }
            details.append(line)
        }
        let lan = interfaces.filter(\.isLAN)
        let others = interfaces.filter { $0.up && !$0.ipv4.isEmpty && $0.kind != .loopback && !$0.isLAN }
        if lan.isEmpty {
            if status == .ok { status = others.isEmpty ? .fail : .warn }
            let summary =
                others.isEmpty
                ? "no network interface with a LAN address: only this machine can be reached"
                : "no Wi-Fi or Ethernet interface with an address; only \(others.map(\.name).joined(separator: ", "))"
            return DoctorCheck(
                check: "interfaces", status: status, summary: summary, details: details,
                fix: (fixes + ["connect to the same Wi-Fi or Ethernet network as the other device"]).joined(separator: "; "))
        }
        let virtual = others.filter { $0.kind == .vpn || $0.kind == .container || $0.kind == .bridge }
        if !virtual.isEmpty && status == .ok {
            status = .warn
            fixes.append(
                "if the other device is not found, keep avahi off those links: allow-interfaces=\(lan.map(\.name).joined(separator: ",")) "
                    + "in /etc/avahi/avahi-daemon.conf; a VPN may also route the LAN away")
        }
        let summary =
            "LAN on \(lan.map(\.name).joined(separator: ", "))"
            + (virtual.isEmpty ? "" : "; also up: \(virtual.map { "\($0.name) (\($0.kind.rawValue))" }.joined(separator: ", "))")
        return DoctorCheck(
            check: "interfaces", status: status, summary: summary, details: details,
            fix: fixes.isEmpty ? nil : fixes.joined(separator: "; "))
    }
}
