/// Advertising-data vectors (AD structures only), from the project's reference notes
/// (`nearby-messages-and-beacons.md` §5.2) plus a few built here for edge cases.
enum BeaconVectors {
    static let flags = "02 01 06"
    static let eddystoneList = "03 03 AA FE"

    static let uidFull = "02 01 06 03 03 AA FE 17 16 AA FE 00 EE 00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF 00 00"
    static let uidLegacy = "02 01 06 03 03 AA FE 15 16 AA FE 00 EE 00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF"
    static let uidNoList = "02 01 06 17 16 AA FE 00 EE 00 11 22 33 44 55 66 77 88 99 AA BB CC DD EE FF 00 00"
    static let iBeacon = "02 01 06 1A FF 4C 00 02 15 01 12 23 34 45 56 67 78 89 9A AB BC CD DE EF F0 00 01 00 02 C5"
    static let urlExample = "02 01 06 03 03 AA FE 0E 16 AA FE 10 EB 03 65 78 61 6D 70 6C 65 00"
    /// The reference's vector has length byte 0F, one more than the 14 bytes that follow; corrected here.
    static let urlGooGl = "02 01 06 03 03 AA FE 0E 16 AA FE 10 F4 00 67 6F 6F 2E 67 6C 2F 78"
    /// The reference's vector has length byte 0E, one more than the 13 bytes that follow; corrected here.
    static let urlGoogle = "02 01 06 03 03 AA FE 0D 16 AA FE 10 EB 01 67 6F 6F 67 6C 65 07"
    /// The reference's goo.gl vector as written: its last AD structure claims one byte more than there is.
    static let urlOverrun = "02 01 06 03 03 AA FE 0F 16 AA FE 10 F4 00 67 6F 6F 2E 67 6C 2F 78"
    static let tlmPlain = "02 01 06 03 03 AA FE 11 16 AA FE 20 00 0B B8 17 80 00 00 01 00 00 00 27 10"
    static let tlmNegative = "02 01 06 03 03 AA FE 11 16 AA FE 20 00 0B B8 FF 80 00 00 01 00 00 00 27 10"
    static let tlmEncrypted = "02 01 06 03 03 AA FE 15 16 AA FE 20 01 01 02 03 04 05 06 07 08 09 0A 0B 0C 12 34 56 78"
    static let eid = "02 01 06 03 03 AA FE 0D 16 AA FE 30 F0 01 23 45 67 89 AB CD EF"
    /// AltBeacon of Radius Networks (0x0118): ID 00..13, reference RSSI −59 (0xC5), reserved 0x42.
    static let altBeacon =
        "02 01 06 1B FF 18 01 BE AC 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F 10 11 12 13 C5 42"

    // Not beacons.
    static let urlReserved = "02 01 06 03 03 AA FE 0E 16 AA FE 10 EB 03 65 78 0E 6D 70 6C 65 00"
    static let urlUnknownScheme = "02 01 06 03 03 AA FE 0E 16 AA FE 10 EB 04 65 78 61 6D 70 6C 65 00"
    static let iBeaconWrongLength = "02 01 06 1A FF 4C 00 02 16 01 12 23 34 45 56 67 78 89 9A AB BC CD DE EF F0 00 01 00 02 C5"
    static let unknownFrame = "02 01 06 03 03 AA FE 0D 16 AA FE 40 F0 01 23 45 67 89 AB CD EF"
}
