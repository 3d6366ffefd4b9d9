import CDBus
import NearbyWire
import Testing

@testable import NearbyBlueZ

/// Values survive a trip through a real libdbus message, and invalid ones are refused before libdbus sees them.
@Suite(.timeLimit(.minutes(5))) struct DBusMarshallingTests {
    private func roundTrip(_ values: [DBusValue]) throws -> [DBusValue] {
        let message = try #require(dbus_message_new_method_call("com.example.Test", "/com/example", "com.example.Test", "M"))
        defer { dbus_message_unref(message) }
        try DBusMarshalling.append(values, to: message)
        return try DBusMarshalling.arguments(of: message)
    }

    @Test func basicTypesRoundTrip() throws {
        let values: [DBusValue] = [
            .byte(0xFE), .boolean(true), .boolean(false), .int16(-42), .uint16(0xFEF3), .int32(-7), .uint32(7),
            .int64(-1), .uint64(UInt64.max), .double(0.5), .string("héllo"), .objectPath("/org/bluez/hci0"),
            .signature("a{sv}"),
        ]
        #expect(try roundTrip(values) == values)
    }

    @Test func blueZShapesRoundTrip() throws {
        let adapter: DBusValue = .dictionary(
            keySignature: "s", valueSignature: "a{sv}",
            [DBusDictionaryEntry(key: .string("org.bluez.Adapter1"), value: .properties([
                "Address": .string("F0:F1:F2:F3:F4:00"), "Powered": .boolean(true), "UUIDs": .strings([]),
            ]))])
        let objects: DBusValue = .dictionary(
            keySignature: "o", valueSignature: "a{sa{sv}}",
            [DBusDictionaryEntry(key: .objectPath("/org/bluez/hci0"), value: adapter)])
        let serviceData: DBusValue = .properties(["0000fef3-0000-1000-8000-00805f9b34fb": .bytes([1, 2, 3])])
        let values: [DBusValue] = [objects, serviceData, .bytes([]), .bytes(Array(0...255)), .variant(.int16(-60)),
                                   .structure([.string("a"), .uint32(1)]), .objectPaths(["/a", "/b"])]
        let decoded = try roundTrip(values)
        #expect(decoded == values)
        let tree = try #require(decoded[0].managedObjects)
        #expect(tree["/org/bluez/hci0"]?["org.bluez.Adapter1"]?["Powered"]?.bool == true)
        #expect(decoded[1].propertyMap?["0000fef3-0000-1000-8000-00805f9b34fb"]?.bytes == [1, 2, 3])
        #expect(decoded[4].int16 == -60)
    }

    @Test func invalidValuesAreRefusedNotAborted() throws {
        for bad: DBusValue in [
            .objectPath("not/a/path"), .objectPath("/trailing/"), .string("nul\u{0}inside"),
            .array(elementSignature: "s", [.uint16(1)]), .array(elementSignature: "{sv}", []),
            .dictionary(keySignature: "v", valueSignature: "s", []), .structure([]),
        ] {
            let error = try #require(throws: NearbyError.self) { try roundTrip([bad]) }
            #expect(error.code == .invalidArgument)
        }
    }

    @Test func invalidNamesAreRefused() throws {
        let error = try #require(throws: NearbyError.self) {
            try DBusConnectionCore.methodCall(destination: "com.example", path: "/x", interface: "no dots", member: "M")
        }
        #expect(error.code == .invalidArgument)
    }
}
