import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBlueZ

/// Another client on the bus forges signals of `org.bluez` and of the bus daemon, unicast to our connection (the
/// bus delivers those whatever our match rules say; GLib's CVE-2024-34397 is this class): none of them is believed,
/// and the real daemon's signals still are. Each forgery is followed by a round trip of the forger to the bus
/// daemon, which routes one connection's messages in order, so the forged signals reach us before anything the
/// real daemon sends afterwards.
@Suite(.timeLimit(.minutes(2))) struct DBusSignalSpoofingTests {
    static let interface = "com.example.Service"

    /// The bus has routed everything `client` sent before this returns.
    private func barrier(_ client: DBusClient) async throws {
        _ = try await client.nameHasOwner("com.example.Barrier")
    }

    /// Forges `org.bluez` leaving the bus: the daemon's `NameOwnerChanged(org.bluez, owner, "")`, from `forger`.
    private func forgeDaemonGone(from forger: DBusClient, to victim: DBusClient, owner: String) async throws {
        try await forger.emitSignal(
            path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
            arguments: [.string(BlueZ.service), .string(owner), .string("")], destination: victim.uniqueName)
    }

    @Test func signalsOfAWellKnownSenderAreBelievedFromItsOwnerOnly() async throws {
        try await withPrivateBus { bus in
            let first = try await bus.connect()
            #expect(try await first.requestName("com.example.Daemon") == 1)
            let forger = try await bus.connect()
            let client = try await bus.connect()
            let pings = await record(try await client.signals(matching: DBusMatch(
                sender: "com.example.Daemon", interface: Self.interface, member: "Ping")))
            // Unicast and broadcast forgeries, then the owner's own signal.
            try await forger.emitSignal(
                path: "/", interface: Self.interface, member: "Ping", arguments: [.string("forged unicast")],
                destination: client.uniqueName)
            try await forger.emitSignal(path: "/", interface: Self.interface, member: "Ping", arguments: [.string("forged")])
            try await barrier(forger)
            try await first.emitSignal(path: "/", interface: Self.interface, member: "Ping", arguments: [.string("first")])
            _ = try await pings.waitFor("the owner's Ping") { $0.arguments == [.string("first")] ? true : nil }
            #expect(await pings.events.map(\.arguments) == [[.string("first")]])

            // The name moves to another connection: its signals count, the old owner's no longer do.
            await first.close()
            // The bus daemon notices the closed connection on its own time; until it has, the name is still taken.
            _ = try await eventually(within: 30, "the first owner's name released") {
                try await client.nameHasOwner("com.example.Daemon") ? nil : true
            }
            let second = try await bus.connect()
            #expect(try await second.requestName("com.example.Daemon") == 1)
            try await barrier(second)
            try await forger.emitSignal(
                path: "/", interface: Self.interface, member: "Ping", arguments: [.string("forged again")],
                destination: client.uniqueName)
            try await barrier(forger)
            try await second.emitSignal(path: "/", interface: Self.interface, member: "Ping", arguments: [.string("second")])
            _ = try await pings.waitFor("the new owner's Ping") { $0.arguments == [.string("second")] ? true : nil }
            #expect(await pings.events.map(\.arguments) == [[.string("first")], [.string("second")]])
            #expect(await client.isOwner(second.uniqueName, of: "com.example.Daemon"))
            #expect(await client.isOwner(forger.uniqueName, of: "com.example.Daemon") == false)
            await pings.stop()
            await second.close()
            await forger.close()
            await client.close()
        }
    }

    @Test func forgedNameOwnerChangedDoesNotMakeBluetoothdLookGone() async throws {
        try await withPrivateBus { bus in
            let fake = try await FakeBlueZ(bus: bus)
            let forger = try await bus.connect()
            let client = try await bus.connect()
            let adapter = try await BlueZAdapter.find(on: client, name: "hci0")
            let advertiser = BlueZAdvertiser(adapter: adapter)
            let advertiserEvents = await record(advertiser.events)
            let adapterEvents = await record(await adapter.events())
            try await advertiser.start(.nearby([1, 2, 3]))
            _ = try await advertiserEvents.waitFor("registered") { $0 == .registered(adapterPath: FakeBlueZ.adapterPath, count: 1) ? true : nil }

            try await forgeDaemonGone(from: forger, to: client, owner: fake.connection.uniqueName)
            // A forged hand-over of org.bluez to the forger, and a forged power-off.
            try await forger.emitSignal(
                path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                arguments: [.string(BlueZ.service), .string(fake.connection.uniqueName), .string(forger.uniqueName)],
                destination: client.uniqueName)
            try await forger.emitSignal(
                path: FakeBlueZ.adapterPath, interface: BlueZ.propertiesInterface, member: "PropertiesChanged",
                arguments: [.string(BlueZ.adapterInterface), .properties(["Powered": .boolean(false)]), .strings([])],
                destination: client.uniqueName)
            // bluetoothd's Release, called by someone else: refused.
            let refused = try await #require(throws: NearbyError.self) {
                try await forger.call(
                    destination: client.uniqueName, path: advertiser.objectPath, interface: BlueZ.advertisementInterface,
                    member: "Release")
            }
            #expect(refused.dbusErrorName == "org.freedesktop.DBus.Error.AccessDenied")
            try await barrier(forger)
            #expect(await adapter.daemonPresent)
            #expect(await adapter.state?.powered == true)
            #expect(await advertiser.isRegistered)

            // The real daemon powers the adapter off: that is believed, and is the first change seen.
            try await fake.setPowered(false)
            _ = try await adapterEvents.waitFor("powered off") { $0 == .powered(false) ? true : nil }
            _ = try await advertiserEvents.waitFor("unregistered") { $0 == .unregistered(reason: "adapter powered off") ? true : nil }
            #expect(await adapterEvents.events == [.powered(false)])
            #expect(await advertiserEvents.events == [
                .registered(adapterPath: FakeBlueZ.adapterPath, count: 1), .unregistered(reason: "adapter powered off"),
            ])

            // And the real daemon leaving is believed too.
            await fake.connection.close()
            _ = try await adapterEvents.waitFor("daemon gone") { $0 == .daemonGone ? true : nil }
            #expect(await adapter.daemonPresent == false)
            await adapterEvents.stop()
            await advertiserEvents.stop()
            await advertiser.stop()
            await adapter.stop()
            await forger.close()
            await client.close()
        }
    }

    @Test func forgedDevicesAreNotReportedByTheScanner() async throws {
        try await withPrivateBus { bus in
            let fake = try await FakeBlueZ(bus: bus)
            let forger = try await bus.connect()
            let client = try await bus.connect()
            let adapter = try await BlueZAdapter.find(on: client)
            let scanner = BlueZScanner(adapter: adapter)
            let reports = await record(try await scanner.start(serviceDataUUIDs: [BlueZ.uuid(0xFEF3)]))
            let forgedData: [String: DBusValue] = [
                "Address": .string("C0:00:00:00:00:66"), "AddressType": .string("random"), "RSSI": .int16(-30),
                "ServiceData": .properties([BlueZ.uuid(0xFEF3): .bytes([0x66, 0x66])]),
            ]
            // A forged new device, unicast and broadcast (our rules name org.bluez, so the bus drops the broadcast).
            for destination in [client.uniqueName, nil] {
                try await forger.emitSignal(
                    path: "/", interface: BlueZ.objectManagerInterface, member: "InterfacesAdded",
                    arguments: [.objectPath("\(FakeBlueZ.adapterPath)/dev_C0_00_00_00_00_66"),
                                .interfaces([BlueZ.deviceInterface: forgedData])],
                    destination: destination)
            }
            try await barrier(forger)
            // A real device, then a forged change of it.
            try await fake.addDevice("dev_C0_00_00_00_00_AD", properties: [
                "Address": .string("C0:00:00:00:00:AD"), "AddressType": .string("random"), "RSSI": .int16(-50),
                "ServiceData": .properties([BlueZ.uuid(0xFEF3): .bytes([0xCA, 0xFE])]),
            ])
            _ = try await reports.waitFor("the real device") { $0.address == "C0:00:00:00:00:AD" ? true : nil }
            try await forger.emitSignal(
                path: "\(FakeBlueZ.adapterPath)/dev_C0_00_00_00_00_AD", interface: BlueZ.propertiesInterface,
                member: "PropertiesChanged",
                arguments: [.string(BlueZ.deviceInterface),
                            .properties(["ServiceData": .properties([BlueZ.uuid(0xFEF3): .bytes([0x66])])]), .strings([])],
                destination: client.uniqueName)
            try await barrier(forger)
            try await fake.changeDevice("dev_C0_00_00_00_00_AD", ["RSSI": .int16(-45)])
            _ = try await reports.waitFor("the real change") { $0.rssi == -45 ? true : nil }
            #expect(await reports.events == [
                BlueZScanReport(address: "C0:00:00:00:00:AD", addressType: "random",
                                serviceData: [BlueZ.uuid(0xFEF3): [0xCA, 0xFE]], rssi: -50),
                BlueZScanReport(address: "C0:00:00:00:00:AD", addressType: "random",
                                serviceData: [BlueZ.uuid(0xFEF3): [0xCA, 0xFE]], rssi: -45),
            ])
            await reports.stop()
            await scanner.stop()
            await adapter.stop()
            await fake.connection.close()
            await forger.close()
            await client.close()
        }
    }
}

/// `DBusNameOwners` and `DBusMatch` on hand-made messages: who is believed.
@Suite(.timeLimit(.minutes(1))) struct DBusNameOwnersTests {
    static func nameOwnerChanged(sender: String, name: String, old: String, new: String) -> DBusReceivedMessage {
        DBusReceivedMessage(
            kind: .signal, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
            sender: sender, arguments: [.string(name), .string(old), .string(new)])
    }

    @Test func ownersFollowTheBusDaemonOnly() {
        var owners = DBusNameOwners()
        #expect(owners.accepts(sender: ":1.7", as: "org.bluez") == false)
        owners.set("org.bluez", owner: ":1.7")
        #expect(owners.accepts(sender: ":1.7", as: "org.bluez"))
        #expect(owners.accepts(sender: ":1.8", as: "org.bluez") == false)
        #expect(owners.accepts(sender: "org.bluez", as: "org.bluez") == false)
        #expect(owners.accepts(sender: "", as: "org.bluez") == false)
        #expect(owners.accepts(sender: "org.freedesktop.DBus", as: "org.freedesktop.DBus"))
        #expect(owners.accepts(sender: ":1.7", as: "org.freedesktop.DBus") == false)
        #expect(owners.accepts(sender: ":1.7", as: ":1.7"))

        // A forged change from a client is not applied; the daemon's is.
        let applied1 = owners.observe(Self.nameOwnerChanged(sender: ":1.9", name: "org.bluez", old: ":1.7", new: ":1.9"))
        #expect(!applied1)
        #expect(owners.owner(of: "org.bluez") == ":1.7")
        let applied2 = owners.observe(Self.nameOwnerChanged(sender: "org.freedesktop.DBus", name: "org.bluez", old: ":1.7", new: ""))
        #expect(applied2)
        #expect(owners.owner(of: "org.bluez") == nil)
        #expect(owners.accepts(sender: ":1.7", as: "org.bluez") == false)
        let applied3 = owners.observe(Self.nameOwnerChanged(sender: "org.freedesktop.DBus", name: "org.bluez", old: "", new: ":1.12"))
        #expect(applied3)
        #expect(owners.owner(of: "org.bluez") == ":1.12")
        // Names nobody follows are not picked up from the daemon's signals either.
        let applied4 = owners.observe(Self.nameOwnerChanged(sender: "org.freedesktop.DBus", name: "com.example", old: "", new: ":1.3"))
        #expect(!applied4)
        #expect(owners.isWatched("com.example") == false)
        // Malformed: wrong argument types or count.
        var malformed = Self.nameOwnerChanged(sender: "org.freedesktop.DBus", name: "org.bluez", old: ":1.12", new: ":1.13")
        malformed.arguments[2] = .objectPath("/x")
        let applied5 = owners.observe(malformed)
        #expect(!applied5)
        malformed.arguments = [.string("org.bluez")]
        let applied6 = owners.observe(malformed)
        #expect(!applied6)
        #expect(owners.owner(of: "org.bluez") == ":1.12")
    }

    @Test func matchesCheckTheSenderAgainstTheOwners() {
        var owners = DBusNameOwners()
        owners.set("org.bluez", owner: ":1.7")
        let rule = DBusMatch.objectManager(sender: "org.bluez", member: "InterfacesAdded")
        func added(from sender: String) -> DBusReceivedMessage {
            DBusReceivedMessage(
                kind: .signal, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
                sender: sender)
        }
        #expect(rule.matches(added(from: ":1.7"), owners: owners))
        #expect(rule.matches(added(from: ":1.99"), owners: owners) == false)
        #expect(rule.matches(added(from: ":1.7"), owners: DBusNameOwners()) == false)
        let daemon = DBusMatch.nameOwnerChanged("org.bluez")
        #expect(daemon.matches(Self.nameOwnerChanged(sender: "org.freedesktop.DBus", name: "org.bluez", old: ":1.7", new: ""), owners: owners))
        #expect(daemon.matches(Self.nameOwnerChanged(sender: ":1.99", name: "org.bluez", old: ":1.7", new: ""), owners: owners) == false)
        #expect(DBusMatch(interface: "x.y").matches(
            DBusReceivedMessage(kind: .signal, path: "/", interface: "x.y", member: "Z", sender: ":1.99"), owners: owners))
        #expect(rule.wellKnownSender == "org.bluez")
        #expect(daemon.wellKnownSender == nil)
        #expect(DBusMatch(sender: ":1.7").wellKnownSender == nil)
    }
}
