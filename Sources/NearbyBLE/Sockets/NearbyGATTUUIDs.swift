/// The GATT types of Nearby's BLE medium, on the Copresence service 0xFEF3.
///
/// Sources: google/nearby `connections/implementation/mediums/ble/ble_utils.cc` (service, slot characteristics
/// `GenerateAdvertisementUuid`), the Apple `GNSUtils.m` and `GNSPeripheralServiceManager.m` (Weave
/// characteristics: the client writes with response to `…0101`, the server indicates on `…0102`).
package enum NearbyGATTUUIDs {
    /// The Copresence service, 0xFEF3.
    package static let service = BLEUUID(0xFEF3)
    /// The Weave characteristic the client writes to (write with response).
    package static let weaveClientToServer = BLEUUID(string: "00000100-0004-1000-8000-001A11000101")!
    /// The Weave characteristic the server indicates on.
    package static let weaveServerToClient = BLEUUID(string: "00000100-0004-1000-8000-001A11000102")!

    /// The read-only characteristic holding GATT advertisement slot `slot` (0…15):
    /// `00000000-0000-3000-8000-00000000000N`.
    package static func advertisementSlot(_ slot: Int) -> BLEUUID {
        var bytes: [UInt8] = [0, 0, 0, 0, 0, 0, 0x30, 0x00, 0x80, 0, 0, 0, 0, 0, 0, 0]
        bytes[14] = UInt8(truncatingIfNeeded: slot >> 8)
        bytes[15] = UInt8(truncatingIfNeeded: slot)
        return BLEUUID(bytes: bytes)
    }
}
