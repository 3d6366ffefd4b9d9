import CDBus
@testable import NearbyBlueZ
import NearbyWire

/// A D-Bus message as a hostile bus client can put it on our connection (unicast signals reach us whatever our match
/// rules say): wire bytes demarshalled by libdbus (which validates the header and the body against its signature),
/// then unmarshalled by `DBusReceivedMessage`, filtered by the sender checks (`DBusNameOwners`, `DBusMatch`) and fed
/// to the BlueZ state machines the accepted signals drive (`BlueZAdapterTracker`, `BlueZDeviceReports`).
///
/// Input: one mode byte (bits 0-1: whether `org.bluez` is followed and owned by `:1.7`, followed with no owner, or
/// not followed), then the marshalled message. Checked: unmarshalled arguments marshal again to the same values;
/// only the bus daemon changes an owner; a rule with a sender only accepts that sender's current owner; the trackers
/// never report a device without an address.
func fuzzDBusSignals(_ input: FuzzInput) {
    var input = input
    let mode = input.byte()
    let bytes = input.rest()
    guard let message = demarshal(bytes) else { return }
    defer { dbus_message_unref(message) }
    guard let decoded = try? DBusReceivedMessage(message) else { return }
    checkRoundTrip(decoded.arguments)

    var owners = DBusNameOwners()
    switch mode & 3 {
    case 0: owners.set(BlueZ.service, owner: ":1.7")
    case 1: owners.set(BlueZ.service, owner: nil)
    default: break
    }
    let before = owners
    let applied = owners.observe(decoded)
    fuzzCheck(!applied || decoded.sender == DBusNameOwners.busName, "an owner change from \(decoded.sender) was applied")
    fuzzCheck(applied || owners == before, "owners changed without an owner change being applied")

    let rules: [DBusMatch] = [
        .nameOwnerChanged(BlueZ.service),
        .objectManager(sender: BlueZ.service, member: "InterfacesAdded"),
        .objectManager(sender: BlueZ.service, member: "InterfacesRemoved"),
        .propertiesChanged(sender: BlueZ.service, pathNamespace: "/org/bluez", interface: BlueZ.adapterInterface),
        .propertiesChanged(sender: BlueZ.service, pathNamespace: "/org/bluez", interface: BlueZ.deviceInterface),
    ]
    var tracker = BlueZAdapterTracker(wantedName: nil)
    _ = tracker.snapshot([
        "/org/bluez/hci0": [BlueZ.adapterInterface: ["Address": .string("F0:F1:F2:F3:F4:00"), "Powered": .boolean(true)]],
    ])
    var reports = BlueZDeviceReports(adapterPath: "/org/bluez/hci0")
    let accepted = rules.filter { $0.matches(decoded, owners: owners) }
    for rule in accepted {
        let sender = rule.sender ?? ""
        let expected = sender == DBusNameOwners.busName ? DBusNameOwners.busName : owners.owner(of: sender)
        fuzzCheck(decoded.sender == expected, "\(rule.ruleString) accepted a signal from \(decoded.sender)")
    }
    guard !accepted.isEmpty else { return }
    _ = tracker.apply(decoded)
    if let report = reports.apply(decoded) {
        fuzzCheck(!report.address.isEmpty, "a device report without an address")
    }
}

/// libdbus's demarshaller (validation included); nil for bytes it refuses.
private func demarshal(_ bytes: [UInt8]) -> OpaquePointer? {
    guard !bytes.isEmpty, bytes.count <= 1 << 20 else { return nil }
    var error = DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    return bytes.withUnsafeBufferPointer { buffer in
        buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
            dbus_message_demarshal($0, Int32(buffer.count), &error)
        }
    }
}

/// Arguments read from a message marshal again (when our validation takes them) and read back equal, compared by
/// description so that a NaN equals itself.
private func checkRoundTrip(_ arguments: [DBusValue]) {
    guard (try? arguments.forEach(DBusMarshalling.validate)) != nil,
        let message = dbus_message_new_signal("/", "org.example.Fuzz", "Signal")
    else { return }
    defer { dbus_message_unref(message) }
    guard (try? DBusMarshalling.append(arguments, to: message)) != nil else { return }
    guard let again = try? DBusMarshalling.arguments(of: message) else {
        return fuzzCheck(false, "arguments that were appended cannot be read back")
    }
    fuzzCheck("\(again)" == "\(arguments)", "round trip changed \(arguments) into \(again)")
}

/// The wire bytes of a signal (seeds): libdbus's marshaller, with a sender as the bus daemon stamps it.
func dbusSignalBytes(sender: String, path: String, interface: String, member: String, arguments: [DBusValue]) -> [UInt8]? {
    guard let message = dbus_message_new_signal(path, interface, member) else { return nil }
    defer { dbus_message_unref(message) }
    dbus_message_set_serial(message, 7)
    guard dbus_message_set_sender(message, sender) != 0, (try? DBusMarshalling.append(arguments, to: message)) != nil
    else { return nil }
    var buffer: UnsafeMutablePointer<CChar>?
    var length: Int32 = 0
    guard dbus_message_marshal(message, &buffer, &length) != 0, let buffer else { return nil }
    defer { dbus_free(buffer) }
    return Array(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
}
