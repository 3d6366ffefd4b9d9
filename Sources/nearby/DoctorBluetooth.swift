import Foundation
import NearbyBlueZ

#if canImport(Glibc)
import Glibc
#endif

/// The Bluetooth checks: BlueZ's adapters (powered, and who owns `org.bluez`), rfkill switches, and what the
/// user-space host (`--hci hci:N`) needs: a kernel with Bluetooth and `CAP_NET_ADMIN`. BLE is optional: without it
/// Wi-Fi LAN still works, so a machine with no Bluetooth at all gets `skip`, not `fail`.
enum DoctorBluetoothCheck {
    /// BlueZ on the system bus.
    static func bluez(environment: DoctorEnvironment) async -> DoctorCheck {
        let kernelAdapters = environment.list(environment.sysfs + "/class/bluetooth").filter { !$0.contains(":") }
        let result = await BlueZSystemProbe.run(timeout: .seconds(2), logger: DoctorAvahiCheck.quietLogger)
        switch result {
        case .available(let adapters):
            let owner = await owner(of: BlueZ.service, environment: environment)
            let details = adapters.map { "\($0.name) \($0.address): \($0.powered ? "powered" : "powered off")" }
                + (owner.map { ["org.bluez is owned by \($0)"] } ?? [])
            let off = adapters.filter { !$0.powered }
            if off.count == adapters.count {
                return DoctorCheck(
                    check: "bluez", status: .warn,
                    summary: "bluetoothd runs, but \(off.map(\.name).joined(separator: ", ")) is powered off: no BLE",
                    details: details,
                    fix: "bluetoothctl power on (or switch Bluetooth on in the desktop's settings)")
            }
            return DoctorCheck(
                check: "bluez", status: .ok,
                summary: "bluetoothd runs with \(adapters.map(\.name).joined(separator: ", ")); BLE goes through BlueZ (--hci bluez)",
                details: details)
        case .unavailable(let reason):
            if kernelAdapters.isEmpty {
                return DoctorCheck(
                    check: "bluez", status: .skip,
                    summary: "no Bluetooth adapter: BLE is not used (Wi-Fi LAN still works)", details: [reason])
            }
            return DoctorCheck(
                check: "bluez", status: .fail,
                summary: "the kernel has \(kernelAdapters.joined(separator: ", ")) but BlueZ cannot be used: \(reason)",
                details: [reason],
                fix: "sudo systemctl enable --now bluetooth (or use our own host: --hci hci:N, see hci-permissions)")
        }
    }

    /// The process that owns a bus name: `bluetoothd (pid 412)`.
    private static func owner(of name: String, environment: DoctorEnvironment) async -> String? {
        guard let client = try? await DBusClient.system(logger: DoctorAvahiCheck.quietLogger, timeout: .seconds(2)) else {
            return nil
        }
        let pid = try? await client.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetConnectionUnixProcessID", arguments: [.string(name)], timeout: .seconds(2)
        ).first?.uint32
        await client.close()
        guard let pid else { return nil }
        let command = environment.read("\(environment.procfs)/\(pid)/comm") ?? "process"
        return "\(command) (pid \(pid))"
    }

    /// The rfkill switches of type `bluetooth`.
    static func rfkill(environment: DoctorEnvironment) -> DoctorCheck {
        let base = environment.sysfs + "/class/rfkill"
        var details: [String] = []
        var soft: [String] = []
        var hard: [String] = []
        for entry in environment.list(base) {
            guard environment.read("\(base)/\(entry)/type") == "bluetooth" else { continue }
            let name = environment.read("\(base)/\(entry)/name") ?? entry
            let softBlocked = environment.read("\(base)/\(entry)/soft") == "1"
            let hardBlocked = environment.read("\(base)/\(entry)/hard") == "1"
            details.append("\(entry) (\(name)): \(hardBlocked ? "hard-blocked" : softBlocked ? "soft-blocked" : "unblocked")")
            if hardBlocked { hard.append(name) } else if softBlocked { soft.append(name) }
        }
        if details.isEmpty {
            return DoctorCheck(check: "rfkill", status: .skip, summary: "no Bluetooth rfkill switch")
        }
        if !hard.isEmpty {
            return DoctorCheck(
                check: "rfkill", status: .fail, summary: "Bluetooth is hard-blocked (\(hard.joined(separator: ", ")))",
                details: details, fix: "turn on the wireless hardware switch or key (or enable Bluetooth in the firmware setup)")
        }
        if !soft.isEmpty {
            return DoctorCheck(
                check: "rfkill", status: .fail, summary: "Bluetooth is soft-blocked (\(soft.joined(separator: ", ")))",
                details: details, fix: "rfkill unblock bluetooth")
        }
        return DoctorCheck(check: "rfkill", status: .ok, summary: "Bluetooth is not blocked", details: details)
    }

    /// What `--hci hci:N` (our own host on the HCI user channel) needs.
    static func hciPermissions(environment: DoctorEnvironment) -> DoctorCheck {
        let capable = geteuid() == 0 || hasNetAdmin(environment: environment)
        let descriptor = socket(31 /* AF_BLUETOOTH */, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 1 /* BTPROTO_HCI */)
        let failure = errno
        if descriptor >= 0 { close(descriptor) }
        let kernel = descriptor >= 0 || failure != EAFNOSUPPORT
        let adapters = environment.list(environment.sysfs + "/class/bluetooth").filter { !$0.contains(":") }
        var details = ["CAP_NET_ADMIN: \(capable ? "yes" : "no")", "kernel Bluetooth sockets: \(kernel ? "yes" : "no")"]
        if !adapters.isEmpty { details.append("kernel adapters: \(adapters.joined(separator: ", "))") }
        guard kernel else {
            return DoctorCheck(
                check: "hci-permissions", status: .skip,
                summary: "the kernel has no Bluetooth: --hci hci:N cannot work (tcp: and uart: controllers can)",
                details: details)
        }
        guard capable else {
            return DoctorCheck(
                check: "hci-permissions", status: .warn,
                summary: "--hci hci:N needs CAP_NET_ADMIN, which this process does not have (BlueZ does not need it)",
                details: details,
                fix: "sudo setcap cap_net_admin+ep \(CommandLine.arguments.first ?? "nearby") (and take the adapter from bluetoothd: sudo hciconfig hciN down)")
        }
        return DoctorCheck(
            check: "hci-permissions", status: .ok,
            summary: "--hci hci:N can open the HCI user channel (the adapter must be down and not used by bluetoothd)",
            details: details)
    }

    /// Whether `CAP_NET_ADMIN` (bit 12) is in this process's effective capabilities.
    private static func hasNetAdmin(environment: DoctorEnvironment) -> Bool {
        guard let status = environment.read("\(environment.procfs)/self/status"),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
            let mask = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << 12) != 0
    }
}
