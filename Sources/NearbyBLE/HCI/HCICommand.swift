/// An HCI command opcode: OGF in the top 6 bits, OCF in the low 10.
package struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The 16-bit opcode.
    package let rawValue: UInt16
    /// Creates an opcode from its 16-bit value.
    package init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Creates an opcode from its group (OGF) and command (OCF) fields.
    package init(ogf: UInt16, ocf: UInt16) { self.rawValue = (ogf << 10) | (ocf & 0x3FF) }

    /// `0xHHHH`.
    package var description: String { "0x" + String(rawValue, radix: 16, uppercase: true) }

    /// Disconnect (answered with Command Status).
    package static let disconnect = HCIOpcode(ogf: 0x01, ocf: 0x0006)
    /// Set Event Mask.
    package static let setEventMask = HCIOpcode(ogf: 0x03, ocf: 0x0001)
    /// Reset.
    package static let reset = HCIOpcode(ogf: 0x03, ocf: 0x0003)
    /// Read Local Version Information.
    package static let readLocalVersion = HCIOpcode(ogf: 0x04, ocf: 0x0001)
    /// Read Buffer Size (BR/EDR, used when the LE buffers are shared).
    package static let readBufferSize = HCIOpcode(ogf: 0x04, ocf: 0x0005)
    /// Read BD_ADDR.
    package static let readBDAddr = HCIOpcode(ogf: 0x04, ocf: 0x0009)
    /// LE Set Event Mask.
    package static let leSetEventMask = HCIOpcode(ogf: 0x08, ocf: 0x0001)
    /// LE Read Buffer Size.
    package static let leReadBufferSize = HCIOpcode(ogf: 0x08, ocf: 0x0002)
    /// LE Read Local Supported Features.
    package static let leReadLocalFeatures = HCIOpcode(ogf: 0x08, ocf: 0x0003)
    /// LE Set Random Address.
    package static let leSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0005)
    /// LE Set Advertising Parameters.
    package static let leSetAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0006)
    /// LE Set Advertising Data.
    package static let leSetAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0008)
    /// LE Set Advertising Enable.
    package static let leSetAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x000A)
    /// LE Set Scan Parameters.
    package static let leSetScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x000B)
    /// LE Set Scan Enable.
    package static let leSetScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x000C)
    /// LE Create Connection (answered with Command Status, then LE Connection Complete).
    package static let leCreateConnection = HCIOpcode(ogf: 0x08, ocf: 0x000D)
    /// LE Create Connection Cancel.
    package static let leCreateConnectionCancel = HCIOpcode(ogf: 0x08, ocf: 0x000E)
    /// LE Set Advertising Set Random Address.
    package static let leSetAdvertisingSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0035)
    /// LE Set Extended Advertising Parameters.
    package static let leSetExtendedAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0036)
    /// LE Set Extended Advertising Data.
    package static let leSetExtendedAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0037)
    /// LE Set Extended Advertising Enable.
    package static let leSetExtendedAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x0039)
    /// LE Remove Advertising Set.
    package static let leRemoveAdvertisingSet = HCIOpcode(ogf: 0x08, ocf: 0x003C)
    /// LE Set Extended Scan Parameters.
    package static let leSetExtendedScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x0041)
    /// LE Set Extended Scan Enable.
    package static let leSetExtendedScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x0042)
}

/// An HCI command: an opcode and its parameters, and whether the controller answers it with Command Status (then
/// a later event) rather than Command Complete.
package struct HCICommand: Sendable, Hashable {
    /// The opcode.
    package var opcode: HCIOpcode
    /// The parameter bytes (at most 255).
    package var parameters: [UInt8]
    /// `true` when the controller acknowledges with Command Status.
    package var expectsStatus: Bool

    /// Creates a command.
    package init(_ opcode: HCIOpcode, _ parameters: [UInt8] = [], expectsStatus: Bool = false) {
        self.opcode = opcode
        self.parameters = parameters
        self.expectsStatus = expectsStatus
    }

    /// The command packet without the H4 indicator: opcode (LE), length, parameters.
    package var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendLE16(opcode.rawValue)
        bytes.append(UInt8(truncatingIfNeeded: parameters.count))
        bytes += parameters
        return bytes
    }

    // MARK: builders

    /// Set Event Mask with every event this host needs, LE Meta included.
    package static func setEventMask(_ mask: UInt64 = 0x3DBF_F807_FFFB_FFFF) -> HCICommand {
        var p: [UInt8] = []
        p.appendLE64(mask)
        return HCICommand(.setEventMask, p)
    }

    /// LE Set Event Mask: connection complete, advertising reports, enhanced connection complete, extended
    /// advertising reports and the rest of the first 20 LE events.
    package static func leSetEventMask(_ mask: UInt64 = 0x0000_0000_000F_FFFF) -> HCICommand {
        var p: [UInt8] = []
        p.appendLE64(mask)
        return HCICommand(.leSetEventMask, p)
    }

    /// LE Set Random Address.
    package static func leSetRandomAddress(_ address: BLEAddress) -> HCICommand {
        HCICommand(.leSetRandomAddress, address.bytes)
    }

    /// LE Set Advertising Parameters for connectable undirected advertising (ADV_IND), own address random.
    /// - Parameter interval: in 0.625 ms units (0x0020…0x4000).
    package static func leSetAdvertisingParameters(interval: UInt16) -> HCICommand {
        var p: [UInt8] = []
        p.appendLE16(interval)
        p.appendLE16(interval)
        p.append(0x00)  // ADV_IND
        p.append(BLEAddress.Kind.random.rawValue)
        p.append(0x00)  // peer address type
        p += [UInt8](repeating: 0, count: 6)
        p.append(0x07)  // all three channels
        p.append(0x00)  // no filter
        return HCICommand(.leSetAdvertisingParameters, p)
    }

    /// LE Set Advertising Data (at most 31 bytes, zero-padded).
    package static func leSetAdvertisingData(_ data: [UInt8]) -> HCICommand {
        let clipped = Array(data.prefix(31))
        return HCICommand(
            .leSetAdvertisingData, [UInt8(clipped.count)] + clipped + [UInt8](repeating: 0, count: 31 - clipped.count))
    }

    /// LE Set Advertising Enable.
    package static func leSetAdvertisingEnable(_ enable: Bool) -> HCICommand {
        HCICommand(.leSetAdvertisingEnable, [enable ? 1 : 0])
    }

    /// LE Set Extended Advertising Parameters (v1) for set `handle`: connectable non-legacy advertising on the
    /// 1M PHY with the random own address. `interval` is in 0.625 ms units.
    package static func leSetExtendedAdvertisingParameters(handle: UInt8, properties: UInt16 = 0x0001, interval: UInt32)
        -> HCICommand
    {
        var p: [UInt8] = [handle]
        p.appendLE16(properties)
        p.appendLE24(interval)
        p.appendLE24(interval)
        p.append(0x07)  // channel map
        p.append(BLEAddress.Kind.random.rawValue)
        p.append(0x00)
        p += [UInt8](repeating: 0, count: 6)
        p.append(0x00)  // filter policy
        p.append(0x7F)  // no TX power preference
        p.append(0x01)  // primary PHY 1M
        p.append(0x00)  // secondary max skip
        p.append(0x01)  // secondary PHY 1M
        p.append(0x00)  // SID
        p.append(0x00)  // no scan request notifications
        return HCICommand(.leSetExtendedAdvertisingParameters, p)
    }

    /// LE Set Advertising Set Random Address.
    package static func leSetAdvertisingSetRandomAddress(handle: UInt8, _ address: BLEAddress) -> HCICommand {
        HCICommand(.leSetAdvertisingSetRandomAddress, [handle] + address.bytes)
    }

    /// LE Set Extended Advertising Data, complete data in one command (at most 251 bytes).
    package static func leSetExtendedAdvertisingData(handle: UInt8, _ data: [UInt8]) -> HCICommand {
        HCICommand(.leSetExtendedAdvertisingData, [handle, 0x03, 0x01, UInt8(truncatingIfNeeded: data.count)] + data)
    }

    /// LE Set Extended Advertising Enable for one set, with no duration or event limit.
    package static func leSetExtendedAdvertisingEnable(_ enable: Bool, handle: UInt8) -> HCICommand {
        HCICommand(.leSetExtendedAdvertisingEnable, [enable ? 1 : 0, 1, handle, 0, 0, 0])
    }

    /// LE Remove Advertising Set.
    package static func leRemoveAdvertisingSet(handle: UInt8) -> HCICommand {
        HCICommand(.leRemoveAdvertisingSet, [handle])
    }

    /// LE Set Scan Parameters (legacy): active or passive, interval and window in 0.625 ms units, random own address.
    package static func leSetScanParameters(active: Bool, interval: UInt16, window: UInt16) -> HCICommand {
        var p: [UInt8] = [active ? 1 : 0]
        p.appendLE16(interval)
        p.appendLE16(window)
        p.append(BLEAddress.Kind.random.rawValue)
        p.append(0x00)
        return HCICommand(.leSetScanParameters, p)
    }

    /// LE Set Scan Enable (legacy).
    package static func leSetScanEnable(_ enable: Bool, filterDuplicates: Bool = false) -> HCICommand {
        HCICommand(.leSetScanEnable, [enable ? 1 : 0, filterDuplicates ? 1 : 0])
    }

    /// LE Set Extended Scan Parameters on the 1M PHY.
    package static func leSetExtendedScanParameters(active: Bool, interval: UInt16, window: UInt16) -> HCICommand {
        var p: [UInt8] = [BLEAddress.Kind.random.rawValue, 0x00, 0x01, active ? 1 : 0]
        p.appendLE16(interval)
        p.appendLE16(window)
        return HCICommand(.leSetExtendedScanParameters, p)
    }

    /// LE Set Extended Scan Enable, continuous.
    package static func leSetExtendedScanEnable(_ enable: Bool, filterDuplicates: Bool = false) -> HCICommand {
        HCICommand(.leSetExtendedScanEnable, [enable ? 1 : 0, filterDuplicates ? 1 : 0, 0, 0, 0, 0])
    }

    /// LE Create Connection to `peer` with the random own address. Connection interval 30–50 ms, supervision
    /// timeout 4 s.
    package static func leCreateConnection(to peer: BLEAddress, scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060)
        -> HCICommand
    {
        var p: [UInt8] = []
        p.appendLE16(scanInterval)
        p.appendLE16(scanWindow)
        p.append(0x00)  // no filter accept list
        p.append(peer.kind.rawValue)
        p += peer.bytes
        p.append(BLEAddress.Kind.random.rawValue)
        p.appendLE16(0x0018)  // interval min (30 ms)
        p.appendLE16(0x0028)  // interval max (50 ms)
        p.appendLE16(0)  // latency
        p.appendLE16(0x0190)  // supervision timeout 4 s
        p.appendLE16(0)
        p.appendLE16(0)
        return HCICommand(.leCreateConnection, p, expectsStatus: true)
    }

    /// LE Create Connection Cancel.
    package static let leCreateConnectionCancel = HCICommand(.leCreateConnectionCancel)

    /// Disconnect `handle` with `reason` (default: remote user terminated connection).
    package static func disconnect(handle: UInt16, reason: UInt8 = 0x13) -> HCICommand {
        var p: [UInt8] = []
        p.appendLE16(handle)
        p.append(reason)
        return HCICommand(.disconnect, p, expectsStatus: true)
    }
}
