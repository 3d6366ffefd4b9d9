import NearbyWire
import Testing

@Suite("ByteReader: the one bounds-checked reader of advertisements, HCI/L2CAP packets and message envelopes", .timeLimit(.minutes(5)))
struct ByteReaderTests {
    @Test("reads bytes and integers in the byte order each method names")
    func readsInOrder() throws {
        var reader = ByteReader(
            [0x01, 0x34, 0x12, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF, 0xAA, 0xBB, 0xCC], context: "test",
            code: .invalidAdvertisement)
        #expect(try reader.readByte("a") == 0x01)
        #expect(try reader.readUInt16LittleEndian("b") == 0x1234)
        #expect(try reader.readUInt16BigEndian("c") == 0x1234)
        #expect(try reader.readUInt32BigEndian("d") == 0xDEAD_BEEF)
        #expect(reader.offset == 9)
        #expect(reader.remaining == 3)
        #expect(try reader.readBytes(1, "e") == [0xAA])
        #expect(reader.readRest() == [0xBB, 0xCC])
        #expect(reader.remaining == 0)
        #expect(reader.readRest() == [])
    }

    @Test("a read past the end throws the reader's code, names the context and the field, and consumes nothing")
    func truncation() throws {
        var reader = ByteReader([0x01, 0x02, 0x03], context: "HCI event 0x3e", code: .invalidArgument)
        _ = try reader.readByte("first")
        let error = try #require(throws: NearbyError.self) { try reader.readUInt32BigEndian("length") }
        #expect(error.code == .invalidArgument)
        #expect(error.message == "HCI event 0x3e: length needs 4 bytes at offset 1, only 2 left")
        #expect(reader.offset == 1)
        #expect(try reader.readUInt16LittleEndian("rest") == 0x0302)
        #expect(throws: NearbyError.self) { try reader.readByte("one more") }
    }

    @Test("a negative count throws instead of trapping")
    func negativeCount() throws {
        var reader = ByteReader([0x01], context: "test", code: .invalidAdvertisement)
        let error = try #require(throws: NearbyError.self) { try reader.readBytes(-1, "field") }
        #expect(error.code == .invalidAdvertisement)
        #expect(reader.offset == 0)
    }

    @Test("reads from any collection of bytes, such as a slice that does not start at index 0")
    func slice() throws {
        let packet: [UInt8] = [0xFF, 0xFF, 0x05, 0x06]
        var reader = ByteReader(packet[2...], context: "test", code: .invalidAdvertisement)
        #expect(try reader.readUInt16LittleEndian("value") == 0x0605)
    }

    @Test("an endpoint ID must be printable ASCII; otherwise the error carries the reader's code and context")
    func endpointID() throws {
        var good = ByteReader(Array("ABCD".utf8), context: "test", code: .invalidAdvertisement)
        #expect(try good.readEndpointID().description == "ABCD")
        var bad = ByteReader([0x41, 0x00, 0x42, 0x43], context: "BLE advertisement", code: .invalidAdvertisement)
        let error = try #require(throws: NearbyError.self) { try bad.readEndpointID() }
        #expect(error.code == .invalidAdvertisement)
        #expect(error.message.hasPrefix("BLE advertisement: "))
    }
}
