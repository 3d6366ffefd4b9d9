import Foundation
import Logging
import NearbyCore
import NearbyBlueZ
import NearbyWiFiLAN
import NearbyWire

#if canImport(Glibc)
import Glibc
#endif

/// The Wi-Fi LAN checks: is avahi-daemon running and reachable on the system bus, and does mDNS work (we publish a
/// service of our own and browse for it; the addresses it is found at tell on which interfaces it works).
enum DoctorAvahiCheck {
    /// The system bus, and avahi-daemon on it.
    static func daemon(environment: DoctorEnvironment) async -> DoctorCheck {
        let client: DBusClient
        do {
            client = try await DBusClient.system(logger: quietLogger, timeout: .seconds(2))
        } catch {
            return DoctorCheck(
                check: "avahi", status: .fail,
                summary: "the D-Bus system bus cannot be reached, so neither can avahi-daemon",
                details: ["\(ErrorText.describe(error)) (bus: \(environment.variables["DBUS_SYSTEM_BUS_ADDRESS"] ?? "/run/dbus/system_bus_socket"))"],
                fix: "sudo systemctl start dbus avahi-daemon")
        }
        let result = await daemon(on: client, environment: environment)
        await client.close()
        return result
    }

    private static func daemon(on client: DBusClient, environment: DoctorEnvironment) async -> DoctorCheck {
        let running: Bool
        do {
            running = try await client.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "NameHasOwner", arguments: [.string("org.freedesktop.Avahi")], timeout: .seconds(2)
            ).first?.bool == true
        } catch {
            return DoctorCheck(
                check: "avahi", status: .fail, summary: "the system bus does not answer",
                details: [ErrorText.describe(error)], fix: "sudo systemctl restart dbus")
        }
        guard running else {
            let installed = environment.tool("avahi-daemon") != nil
            return DoctorCheck(
                check: "avahi", status: .fail,
                summary: "avahi-daemon is not running: nearby cannot advertise or discover over Wi-Fi LAN",
                details: ["nothing owns org.freedesktop.Avahi on the system bus"
                    + (installed ? "" : "; avahi-daemon is not installed")],
                fix: installed
                    ? "sudo systemctl enable --now avahi-daemon"
                    : "sudo apt install avahi-daemon (or your distribution's avahi package), then sudo systemctl enable --now avahi-daemon")
        }
        let version = try? await client.call(
            destination: "org.freedesktop.Avahi", path: "/", interface: "org.freedesktop.Avahi.Server",
            member: "GetVersionString", timeout: .seconds(2)
        ).first?.string
        let host = try? await client.call(
            destination: "org.freedesktop.Avahi", path: "/", interface: "org.freedesktop.Avahi.Server",
            member: "GetHostNameFqdn", timeout: .seconds(2)
        ).first?.string
        var details: [String] = []
        if let host { details.append("host name \(host)") }
        return DoctorCheck(
            check: "avahi", status: .ok,
            summary: "avahi-daemon is running\(version.map { " (\($0))" } ?? "") and answers on the system bus",
            details: details)
    }

    /// Publishes `_nearby-doctor._tcp` and browses for it; `interfaces` say where it should be seen.
    static func selfTest(interfaces: [NetworkInterface], timeout: Double = 6) async -> DoctorCheck {
        let discovery: AvahiServiceDiscovery
        do {
            discovery = try AvahiServiceDiscovery()
        } catch {
            return skipped("the system bus cannot be reached")
        }
        let type = "_nearby-doctor._tcp"
        let instance = "nearby-doctor-\(getpid())-\(UInt16.random(in: 0...UInt16.max))"
        let seen = LockedValue<[String]?>(nil)
        let outcome: String? = await firstOf(
            {
                do {
                    let registration = try await discovery.register(
                        DNSSDService(instanceName: instance, serviceType: type, port: 9))
                    if let failure = registration.failure {
                        await registration.cancel()
                        return "publishing failed: \(failure.message)"
                    }
                    let result = await find(instance, type: type, in: discovery, interfaces: interfaces, seen: seen)
                    await registration.cancel()
                    return result
                } catch {
                    return ErrorText.describe(error)
                }
            },
            {
                try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                return "timeout"
            })
        let addresses = seen.withLock { $0 }
        guard let addresses else {
            let why = outcome == "timeout" ? "not found within \(Int(timeout)) s" : (outcome ?? "not found")
            return DoctorCheck(
                check: "mdns", status: .fail,
                summary: "our own test service was not seen: mDNS does not work on this machine (\(why))",
                details: ["published and browsed \(instance).\(type).local"],
                fix: "check that avahi-daemon uses an interface (allow-interfaces/deny-interfaces in "
                    + "/etc/avahi/avahi-daemon.conf) with multicast on, and that nothing drops 5353/udp")
        }
        var details: [String] = []
        var missing: [String] = []
        for interface in interfaces where interface.up && interface.multicast && !interface.ipv4.isEmpty {
            let found = interface.ipv4.contains(where: addresses.contains)
            details.append("\(interface.name): \(found ? "seen" : "not seen") (\(interface.ipv4.joined(separator: ", ")))")
            if !found && interface.isLAN { missing.append(interface.name) }
        }
        if !missing.isEmpty {
            return DoctorCheck(
                check: "mdns", status: .warn,
                summary: "mDNS works, but not on \(missing.joined(separator: ", ")): peers there will not see us",
                details: details,
                fix: "let avahi use \(missing.joined(separator: ", ")) (allow-interfaces in /etc/avahi/avahi-daemon.conf), then sudo systemctl restart avahi-daemon")
        }
        return DoctorCheck(
            check: "mdns", status: .ok, summary: "published and found our own test service (\(addresses.joined(separator: ", ")))",
            details: details)
    }

    /// Browses until `instance` is found at the addresses of every LAN interface (or browsing ends); `seen` gets
    /// the addresses found so far. Copies of the service seen on other interfaces come as further `found` events.
    private static func find(
        _ instance: String, type: String, in discovery: AvahiServiceDiscovery, interfaces: [NetworkInterface],
        seen: LockedValue<[String]?>
    ) async -> String? {
        let wanted = Set(interfaces.filter(\.isLAN).flatMap(\.ipv4))
        do {
            for try await event in discovery.browse(serviceType: type) {
                guard case .found(let service) = event, service.instanceName == instance else { continue }
                seen.withLock { $0 = service.addresses }
                if Set(service.addresses).isSuperset(of: wanted) { return nil }
            }
            return "browsing ended"
        } catch {
            return ErrorText.describe(error)
        }
    }

    static func skipped(_ why: String) -> DoctorCheck {
        DoctorCheck(check: "mdns", status: .skip, summary: "not tested: \(why)")
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "nearby.doctor")
        logger.logLevel = .critical
        return logger
    }
}
