import NearbyWire

/// One advertising report, from a legacy (LE Advertising Report) or an extended (LE Extended Advertising Report)
/// event.
package struct AdvertisingReport: Sendable, Hashable {
    /// The raw event type (legacy: 0…4; extended: the 16-bit event-type bit field).
    package var eventType: UInt16
    /// Whether the report came from an extended advertising report event.
    package var isExtended: Bool
    /// The advertiser's address.
    package var address: BLEAddress
    /// The advertising (or scan response) data: a sequence of AD structures.
    package var data: [UInt8]
    /// The received signal strength in dBm (127 when unavailable).
    package var rssi: Int8

    /// Creates a report.
    package init(eventType: UInt16, isExtended: Bool, address: BLEAddress, data: [UInt8], rssi: Int8) {
        self.eventType = eventType
        self.isExtended = isExtended
        self.address = address
        self.data = data
        self.rssi = rssi
    }

    /// Whether this report is a scan response rather than an advertisement.
    package var isScanResponse: Bool {
        isExtended ? (eventType & 0x0008) != 0 : eventType == 0x04
    }
}

/// An LE connection that completed (LE Connection Complete or LE Enhanced Connection Complete).
package struct LEConnectionComplete: Sendable, Hashable {
    /// 0 on success, otherwise the HCI error code.
    package var status: UInt8
    /// The connection handle (12 bits).
    package var handle: UInt16
    /// `true` when this side is the central.
    package var isCentral: Bool
    /// The peer's address.
    package var peer: BLEAddress
}

/// One entry of a Number Of Completed Packets event.
package struct CompletedPackets: Sendable, Hashable {
    /// The connection handle.
    package var handle: UInt16
    /// How many ACL packets of that connection the controller has finished with.
    package var count: UInt16
}

/// The HCI events this host decodes; everything else is ``unhandled(code:parameters:)``.
package enum HCIEvent: Sendable, Hashable {
    /// Command Complete: opcode and return parameters (status first for most commands).
    case commandComplete(numCommands: UInt8, opcode: HCIOpcode, returnParameters: [UInt8])
    /// Command Status.
    case commandStatus(status: UInt8, numCommands: UInt8, opcode: HCIOpcode)
    /// Disconnection Complete.
    case disconnectionComplete(status: UInt8, handle: UInt16, reason: UInt8)
    /// Number Of Completed Packets: per handle, how many ACL packets the controller has sent and freed.
    case numberOfCompletedPackets([CompletedPackets])
    /// LE Connection Complete or LE Enhanced Connection Complete.
    case leConnectionComplete(LEConnectionComplete)
    /// LE Advertising Report or LE Extended Advertising Report.
    case leAdvertisingReports([AdvertisingReport])
    /// Any other event, or any other LE meta subevent (code 0x3E with the subevent first in `parameters`).
    case unhandled(code: UInt8, parameters: [UInt8])

    /// Event codes.
    package enum Code {
        /// Disconnection Complete.
        package static let disconnectionComplete: UInt8 = 0x05
        /// Command Complete.
        package static let commandComplete: UInt8 = 0x0E
        /// Command Status.
        package static let commandStatus: UInt8 = 0x0F
        /// Number Of Completed Packets.
        package static let numberOfCompletedPackets: UInt8 = 0x13
        /// LE Meta.
        package static let leMeta: UInt8 = 0x3E
    }

    /// Decodes an event packet (code, length, parameters; no H4 indicator).
    /// - Throws: `NearbyError` `.malformedHCIPacket` when the length byte disagrees with the packet or
    ///   a known event's parameters are truncated or inconsistent.
    package init(decoding packet: [UInt8]) throws {
        guard packet.count >= 2 else { throw NearbyError(.malformedHCIPacket, "HCI event shorter than its header") }
        let code = packet[0]
        guard Int(packet[1]) == packet.count - 2 else {
            throw NearbyError(
                .malformedHCIPacket, "HCI event 0x\(String(code, radix: 16)) says \(packet[1]) parameter bytes, has \(packet.count - 2)")
        }
        var r = LEByteReader(packet[2...], context: "HCI event 0x\(String(code, radix: 16))")
        switch code {
        case Code.commandComplete:
            let n = try r.u8("num commands")
            let opcode = HCIOpcode(rawValue: try r.u16("opcode"))
            self = .commandComplete(numCommands: n, opcode: opcode, returnParameters: r.rest())
        case Code.commandStatus:
            let status = try r.u8("status")
            let n = try r.u8("num commands")
            let opcode = HCIOpcode(rawValue: try r.u16("opcode"))
            self = .commandStatus(status: status, numCommands: n, opcode: opcode)
        case Code.disconnectionComplete:
            let status = try r.u8("status")
            let handle = try r.u16("handle") & 0x0FFF
            let reason = try r.u8("reason")
            self = .disconnectionComplete(status: status, handle: handle, reason: reason)
        case Code.numberOfCompletedPackets:
            let count = Int(try r.u8("number of handles"))
            guard r.remaining == count * 4 else { throw r.error("expected \(count * 4) bytes of handles and counts") }
            var entries: [CompletedPackets] = []
            for _ in 0..<count {
                let handle = try r.u16("handle") & 0x0FFF
                entries.append(CompletedPackets(handle: handle, count: try r.u16("count")))
            }
            self = .numberOfCompletedPackets(entries)
        case Code.leMeta:
            let subevent = try r.u8("subevent")
            switch subevent {
            case 0x01, 0x0A:
                let status = try r.u8("status")
                let handle = try r.u16("handle") & 0x0FFF
                let role = try r.u8("role")
                let addressType = try r.u8("peer address type")
                let address = try r.take(6, "peer address")
                _ = try r.take(subevent == 0x0A ? 12 + 7 : 7, "connection parameters")
                let kind: BLEAddress.Kind = (addressType & 0x01) == 1 ? .random : .public
                self = .leConnectionComplete(
                    LEConnectionComplete(
                        status: status, handle: handle, isCentral: role == 0,
                        peer: BLEAddress(hciBytes: address, kind: kind)!))
            case 0x02:
                let count = Int(try r.u8("number of reports"))
                guard count >= 1 else { throw r.error("no reports") }
                var reports: [AdvertisingReport] = []
                for _ in 0..<count {
                    let type = try r.u8("event type")
                    let addressType = try r.u8("address type")
                    let address = try r.take(6, "address")
                    let length = Int(try r.u8("data length"))
                    guard length <= 31 else { throw r.error("advertising data length \(length) > 31") }
                    let data = try r.take(length, "data")
                    let rssi = Int8(bitPattern: try r.u8("rssi"))
                    reports.append(
                        AdvertisingReport(
                            eventType: UInt16(type), isExtended: false,
                            address: BLEAddress(hciBytes: address, kind: (addressType & 1) == 1 ? .random : .public)!,
                            data: data, rssi: rssi))
                }
                guard r.remaining == 0 else { throw r.error("\(r.remaining) trailing bytes") }
                self = .leAdvertisingReports(reports)
            case 0x0D:
                let count = Int(try r.u8("number of reports"))
                guard count >= 1 else { throw r.error("no reports") }
                var reports: [AdvertisingReport] = []
                for _ in 0..<count {
                    let type = try r.u16("event type")
                    let addressType = try r.u8("address type")
                    let address = try r.take(6, "address")
                    _ = try r.take(4, "PHYs, SID, TX power")
                    let rssi = Int8(bitPattern: try r.u8("rssi"))
                    _ = try r.take(9, "periodic interval, direct address")
                    let length = Int(try r.u8("data length"))
                    let data = try r.take(length, "data")
                    reports.append(
                        AdvertisingReport(
                            eventType: type, isExtended: true,
                            address: BLEAddress(hciBytes: address, kind: (addressType & 1) == 1 ? .random : .public)!,
                            data: data, rssi: rssi))
                }
                guard r.remaining == 0 else { throw r.error("\(r.remaining) trailing bytes") }
                self = .leAdvertisingReports(reports)
            default:
                self = .unhandled(code: code, parameters: Array(packet[2...]))
            }
        default:
            self = .unhandled(code: code, parameters: Array(packet[2...]))
        }
    }
}

/// AD structures (length, type, data) in advertising data.
package enum AdvertisingData {
    /// AD type: Flags.
    package static let flagsType: UInt8 = 0x01
    /// AD type: complete list of 16-bit service UUIDs.
    package static let complete16BitUUIDsType: UInt8 = 0x03
    /// AD type: Service Data - 16-bit UUID.
    package static let serviceData16Type: UInt8 = 0x16

    /// Splits advertising data into (type, value) pairs.
    /// - Throws: `NearbyError` `.invalidAdvertisement` when a structure runs past the end.
    package static func structures(_ data: [UInt8]) throws -> [(type: UInt8, value: [UInt8])] {
        var result: [(type: UInt8, value: [UInt8])] = []
        var i = 0
        while i < data.count {
            let length = Int(data[i])
            if length == 0 { break }  // early termination / zero padding
            guard i + 1 + length <= data.count else {
                throw NearbyError(.invalidAdvertisement, "AD structure at \(i) runs past the end of the data")
            }
            result.append((data[i + 1], Array(data[(i + 2)..<(i + 1 + length)])))
            i += 1 + length
        }
        return result
    }

    /// The first Service Data payload for the 16-bit `uuid`, without the UUID; `nil` when absent or malformed.
    package static func serviceData(_ data: [UInt8], uuid: UInt16) -> [UInt8]? {
        guard let structures = try? structures(data) else { return nil }
        for s in structures where s.type == serviceData16Type && s.value.count >= 2 {
            if UInt16(s.value[0]) | UInt16(s.value[1]) << 8 == uuid { return Array(s.value[2...]) }
        }
        return nil
    }

    /// Service Data for `uuid`, preceded by Flags (LE General Discoverable, BR/EDR not supported) and the 16-bit
    /// UUID list when they fit in `maxLength` bytes.
    package static func build(serviceUUID uuid: UInt16, serviceData: [UInt8], maxLength: Int = 31) -> [UInt8] {
        var service: [UInt8] = [UInt8(truncatingIfNeeded: serviceData.count + 3), serviceData16Type]
        service.appendLE16(uuid)
        service += serviceData
        var prefix: [UInt8] = [0x02, flagsType, 0x06]
        if prefix.count + 4 + service.count <= maxLength {
            prefix += [0x03, complete16BitUUIDsType]
            prefix.appendLE16(uuid)
        }
        if prefix.count + service.count > maxLength { prefix = [] }
        return prefix + service
    }
}
