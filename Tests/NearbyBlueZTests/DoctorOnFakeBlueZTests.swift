import Foundation
import NearbyTestSupport
import Testing

@testable import NearbyBlueZ

/// `nearby doctor` with a private system bus: a fake `bluetoothd` with a powered adapter, the same adapter powered
/// off, and no `bluetoothd` at all. That bus has no avahi-daemon, so the avahi check fails every time (and says
/// how to fix it).
@Suite(.timeLimit(.minutes(3)))
struct DoctorOnFakeBlueZTests {
    static func doctor(_ bus: PrivateBus) async throws -> (status: Int32, checks: [String: [String: Any]], output: String) {
        let (status, output) = try await BlueZDefaultCLITests.run(["doctor", "--json", "--timeout", "1"], systemBus: bus)
        var checks: [String: [String: Any]] = [:]
        for line in output.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["event"] as? String == "check", let name = object["check"] as? String
            else { continue }
            checks[name] = object
        }
        return (status, checks, output)
    }

    @Test("bluetoothd with a powered adapter: bluez ok, naming hci0 and who owns org.bluez")
    func powered() async throws {
        try await withPrivateBus { bus in
            let daemon = try await FakeBlueZ(bus: bus)
            let (status, checks, output) = try await Self.doctor(bus)
            withExtendedLifetime(daemon) {}
            #expect(checks["bluez"]?["status"] as? String == "ok", "\(output)")
            let details = (checks["bluez"]?["details"] as? [String]) ?? []
            #expect(details.contains { $0.hasPrefix("hci0 ") && $0.hasSuffix("powered") }, "\(output)")
            #expect(details.contains { $0.hasPrefix("org.bluez is owned by") && $0.contains("pid \(getpid())") }, "\(output)")
            // No avahi on this bus: a failure with its fix, and the exit status says so.
            #expect(checks["avahi"]?["status"] as? String == "fail", "\(output)")
            #expect((checks["avahi"]?["fix"] as? String)?.contains("avahi-daemon") == true, "\(output)")
            #expect(checks["mdns"]?["status"] as? String == "skip", "\(output)")
            #expect(status == 1, "\(output)")
        }
    }

    @Test("the adapter powered off: a warning with the command that powers it on")
    func poweredOff() async throws {
        try await withPrivateBus { bus in
            let daemon = try await FakeBlueZ(bus: bus)
            try await daemon.setPowered(false)
            let (_, checks, output) = try await Self.doctor(bus)
            withExtendedLifetime(daemon) {}
            #expect(checks["bluez"]?["status"] as? String == "warn", "\(output)")
            #expect((checks["bluez"]?["fix"] as? String)?.contains("bluetoothctl power on") == true, "\(output)")
        }
    }

    @Test("no bluetoothd: skipped when the kernel has no adapter either (BLE is optional), else a failure")
    func noBluetoothd() async throws {
        let kernelAdapters = ((try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/bluetooth")) ?? [])
            .filter { !$0.contains(":") }
        try await withPrivateBus { bus in
            let (_, checks, output) = try await Self.doctor(bus)
            #expect(checks["bluez"]?["status"] as? String == (kernelAdapters.isEmpty ? "skip" : "fail"), "\(output)")
            #expect((checks["bluez"]?["details"] as? [String])?.first?.contains("bluetoothd is not on the system bus") == true, "\(output)")
        }
    }
}
