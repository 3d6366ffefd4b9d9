import Foundation
import NearbyBLE
import NearbyCore
import NearbyMessages
@testable import NearbyBlueZ
@testable import NearbySecurity
import NearbyWire
@testable import NearbyQuickShare

/// The committed seed corpus (`Fuzz/Corpus/<target>/`), made from the real builders so that it tracks the wire
/// format. `scripts/fuzz.sh --write-seeds` runs the binary with `NEARBY_FUZZ_WRITE_SEEDS=<directory>`.
enum Seeds {
    static func all() -> [String: [[UInt8]]] {
        [
            "framing": framing(),
            "offline-frame": offlineFrames().map { OfflineFrames.serialize($0) },
            "ukey2-server": ukey2Server(),
            "ukey2-client": [ukey2ServerInit()],
            "secure-message": secureMessages(),
            "wifi-lan-service": wifiLanService(),
            "ble-advertisement": bleAdvertisements(),
            "hci": hci(),
            "l2cap": l2cap(),
            "ble-socket": bleSocket(),
            "att": att(),
            "messages-envelope": messagesEnvelopes(),
            "beacons": beacons(),
            "connection-state-machine": connectionStateMachine(),
            "quick-share": quickShare(),
            "dbus-signals": dbusSignals(),
        ].merging(hardening()) { first, _ in first }
    }

    /// Writes every seed as `<directory>/<target>/seed-NN`.
    static func write(to directory: String) throws {
        for (target, seeds) in all() {
            let folder = URL(fileURLWithPath: directory).appendingPathComponent(target)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (index, seed) in seeds.enumerated() {
                let name = String(format: "seed-%02d", index)
                try Data(seed).write(to: folder.appendingPathComponent(name))
            }
        }
    }

    // MARK: - Frames

    static let fileHeader = OfflineFrames.payloadHeader(
        id: 42, type: .file, totalSize: 5, fileName: "photo.jpg", parentFolder: "holiday")
    static let bytesHeader = OfflineFrames.payloadHeader(id: 7, type: .bytes, totalSize: 3)
    static let streamHeader = OfflineFrames.payloadHeader(id: 9, type: .stream, totalSize: -1)

    static func offlineFrames() -> [ProtoOfflineFrame] {
        [
            OfflineFrames.connectionRequest(.init(
                endpointID: "ABCD", endpointInfo: Array("phone".utf8), nonce: 1234, mediums: [.wifiLan, .bleL2Cap],
                keepAliveIntervalMillis: 5_000, keepAliveTimeoutMillis: 30_000)),
            OfflineFrames.connectionResponse(accept: true),
            OfflineFrames.connectionResponse(accept: false),
            OfflineFrames.payloadData(header: bytesHeader, offset: 0, body: Data([1, 2, 3]), index: 0, isLast: true),
            OfflineFrames.payloadData(header: fileHeader, offset: 0, body: Data("hello".utf8), index: 0, isLast: false),
            OfflineFrames.payloadData(header: fileHeader, offset: 5, body: nil, index: 1, isLast: true),
            OfflineFrames.payloadData(header: streamHeader, offset: 0, body: Data([9, 9]), index: 0, isLast: false),
            OfflineFrames.payloadControl(header: fileHeader, event: .payloadCanceled, offset: 2),
            OfflineFrames.payloadControl(header: fileHeader, event: .payloadReceivedAck, offset: 5),
            OfflineFrames.keepAlive(ack: false, sequenceNumber: 3),
            OfflineFrames.keepAlive(ack: true, sequenceNumber: 3),
            OfflineFrames.disconnection(),
            OfflineFrames.upgradePathAvailableWifiLan(addresses: [[192, 168, 1, 20]], port: 45_000),
            OfflineFrames.upgradePathAvailableWifiLan(
                addresses: [[0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], [127, 0, 0, 1]], port: 1),
            OfflineFrames.upgradeFailure(OfflineFrames.wifiLanUpgradePath(addresses: [[10, 0, 0, 2]], port: 8080)),
            OfflineFrames.clientIntroduction(endpointID: "ABCD"),
            OfflineFrames.clientIntroductionAck(),
            OfflineFrames.lastWriteToPriorChannel(),
            OfflineFrames.safeToClosePriorChannel(),
        ]
    }

    static func framing() -> [[UInt8]] {
        let bodies = offlineFrames().prefix(4).map { OfflineFrames.serialize($0) }
        var stream: [UInt8] = []
        for body in bodies { stream += (try? LengthPrefixFraming.frame(body)) ?? [] }
        return [
            [1, 7, 3, 64] + stream,
            [4, 4, 4, 4] + ((try? LengthPrefixFraming.frame([])) ?? []),
            [0, 0, 0, 0] + LengthPrefixFraming.encodeLength(LengthPrefixFraming.maxFrameLength) + [0xAA],
        ]
    }

    // MARK: - UKEY2 and SecureMessage

    /// The genuine client's (ClientInit, ClientFinished) with the fuzz keys.
    static func ukey2ClientMessages() -> (clientInit: [UInt8], clientFinished: [UInt8], serverInit: [UInt8]) {
        var client = Ukey2Client(privateKey: FuzzKeys.client, random: FuzzKeys.random)
        var server = Ukey2Server(privateKey: FuzzKeys.server, random: FuzzKeys.random)
        let clientInit = (try? client.start()) ?? []
        guard case .send(let serverInit) = server.receive(clientInit),
            case .sendAndComplete(let clientFinished, _) = client.receive(serverInit)
        else { return (clientInit, [], []) }
        return (clientInit, clientFinished, serverInit)
    }

    static func ukey2Server() -> [[UInt8]] {
        let (clientInit, clientFinished, _) = ukey2ClientMessages()
        let alert = Ukey2Envelope.alert(.badMessage, "fuzz")
        return [
            [0] + le16(clientInit.count) + clientInit + clientFinished,
            [1] + clientFinished,
            [0] + le16(alert.count) + alert,
            [1] + alert,
        ]
    }

    static func ukey2ServerInit() -> [UInt8] { ukey2ClientMessages().serverInit }

    static func secureMessages() -> [[UInt8]] {
        var sender = D2DSecureChannel(nextProtocolSecret: SecureMessageFuzzKeys.secret, role: .client)
        let sealed = (try? sender.encode(Array("hello".utf8), iv: SecureMessageFuzzKeys.iv)) ?? []
        let frame = OfflineFrames.serialize(OfflineFrames.keepAlive(ack: false, sequenceNumber: 1))
        // HeaderAndBody is field 1 of the sealed message: tag, 1-byte length, then the bytes.
        let headerAndBody = Array(sealed.dropFirst(2).prefix(Int(sealed.count > 1 ? sealed[1] : 0)))
        var plaintext: [UInt8] = []
        appendField(1, frame, to: &plaintext)
        plaintext += [0x10, 0x01]
        return [
            [0] + sealed,
            [1] + [0, 0, 0] + le16(frame.count) + frame + [40, 0, 0x80] + le16(5) + Array("again".utf8),
            [2] + headerAndBody,
            [3, 0] + plaintext,
            [3, 1, UInt8(SecureMessageFuzzKeys.standardHeader.count)] + SecureMessageFuzzKeys.standardHeader + plaintext,
        ]
    }

    // MARK: - Advertisements

    static func wifiLanService() -> [[UInt8]] {
        guard let endpointID = try? EndpointID("ABCD") else { return [] }
        let info = WifiLanServiceInfo(pcp: .p2pCluster, endpointID: endpointID, serviceID: "fuzz")
        let endpointInfo = (try? WifiLanTXTRecord.encodeEndpointInfo(Array("laptop".utf8))) ?? ""
        let name = Array(info.serviceName.utf8)
        let txt = Array("n=\(endpointInfo)".utf8)
        return [
            [0] + info.encodedBytes,
            [1] + name,
            [1] + Array(endpointInfo.utf8),
            [2, UInt8(name.count)] + name + [UInt8(txt.count)] + txt + [3] + Array("a=b".utf8),
        ]
    }

    static func bleAdvertisements() -> [[UInt8]] {
        guard let endpointID = try? EndpointID("WXYZ") else { return [] }
        let hash = ServiceIDHash.advertisementHash(serviceID: "fuzz")
        var filter = BleServiceIDBloomFilter()
        filter.add("fuzz")
        var seeds: [[UInt8]] = []
        if let header = try? BleAdvertisementHeader(
            supportsExtendedAdvertisement: true, slotCount: 1, serviceIDBloomFilter: filter,
            advertisementHash: [1, 2, 3, 4], psm: 0x0081)
        {
            seeds.append([0] + header.encodedBytes)
        }
        let regular = try? BleConnectionsAdvertisement.regular(
            pcp: .p2pCluster, serviceIDHash: hash, endpointID: endpointID, endpointInfo: Array("watch".utf8),
            bluetoothMACAddress: [1, 2, 3, 4, 5, 6])
        let fast = try? BleConnectionsAdvertisement.fast(pcp: .p2pCluster, endpointID: endpointID, endpointInfo: [7])
        if let regular, let medium = try? BleMediumAdvertisement.regular(
            serviceIDHash: hash, data: regular.encodedBytes, deviceToken: [0xAB, 0xCD], psm: 0x0081)
        {
            seeds.append([1] + medium.encodedBytes)
            seeds.append([2] + regular.encodedBytes)
            seeds.append([5] + AdvertisingData.build(serviceUUID: BLEMedium.serviceUUID, serviceData: medium.encodedBytes, maxLength: 251))
        }
        if let fast, let medium = try? BleMediumAdvertisement.fast(data: fast.encodedBytes, deviceToken: [0xAB, 0xCD]) {
            seeds.append([1] + medium.encodedBytes)
            seeds.append([3] + fast.encodedBytes)
            seeds.append([5] + AdvertisingData.build(serviceUUID: BLEMedium.serviceUUID, serviceData: medium.encodedBytes))
        }
        seeds.append([4] + filter.bytes)
        return seeds
    }

    // MARK: - BLE host

    static func hci() -> [[UInt8]] {
        let request = L2CAPSignal.leCreditConnectionRequest(
            identifier: 1, psm: 0x0081, sourceCID: 0x0040, mtu: 512, mps: 247, credits: 10)
        let signalling = L2CAPFrame.encode(cid: L2CAPConstants.leSignalingCID, payload: request.encoded)
        let data = L2CAPFrame.encode(cid: 0x0040, payload: [0, 3, 1, 2, 3])
        var stream: [UInt8] = []
        // Command Complete for LE Set Scan Enable, Command Status, LE Connection Complete, Number of Completed Packets.
        stream += H4Packet.event([0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]).encoded
        stream += H4Packet.event([0x0F, 0x04, 0x00, 0x01, 0x0D, 0x20]).encoded
        stream += H4Packet.event([0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x01, 1, 2, 3, 4, 5, 0xC6,
                                  0x18, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00]).encoded
        stream += H4Packet.event([0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00]).encoded
        // An LE Advertising Report with Nearby service data.
        let adData = AdvertisingData.build(serviceUUID: BLEMedium.serviceUUID, serviceData: [0x5A, 1, 2, 3, 4, 0xAB, 0xCD])
        stream += H4Packet.event([0x3E, UInt8(12 + adData.count), 0x02, 0x01, 0x00, 0x01, 1, 2, 3, 4, 5, 0xC6,
                                  UInt8(adData.count)] + adData + [0xC4]).encoded
        for packet in ACLPacket.fragments(handle: 0x0040, pdu: signalling, maxDataLength: 8) {
            stream += H4Packet.acl(packet.encoded).encoded
        }
        stream += H4Packet.acl(ACLPacket(handle: 0x0040, boundary: .firstNonFlushable, data: data).encoded).encoded
        return [[5] + stream, [32] + stream]
    }

    static func l2cap() -> [[UInt8]] {
        let signals: [L2CAPSignal] = [
            .commandReject(identifier: 1, reason: 0, data: []),
            .disconnectionRequest(identifier: 2, destinationCID: 0x40, sourceCID: 0x41),
            .disconnectionResponse(identifier: 3, destinationCID: 0x40, sourceCID: 0x41),
            .connectionParameterUpdateRequest(identifier: 4, parameters: [6, 0, 6, 0, 0, 0, 0xC8, 0]),
            .connectionParameterUpdateResponse(identifier: 5, result: 0),
            .leCreditConnectionRequest(identifier: 6, psm: 0x81, sourceCID: 0x40, mtu: 512, mps: 247, credits: 10),
            .leCreditConnectionResponse(identifier: 7, destinationCID: 0x40, mtu: 512, mps: 247, credits: 10, result: 0),
            .flowControlCredit(identifier: 8, cid: 0x40, credits: 5),
        ]
        var seeds = signals.map { [0] + $0.encoded }
        let sdu = Array(0..<200).map { UInt8($0) }
        var kframes: [UInt8] = [1] + le16(512) + le16(64)
        for segment in KFrameSegmenter.segments(sdu: sdu, mps: 64) { kframes += le16(segment.count) + segment }
        seeds.append(kframes)
        seeds.append([2, 41] + sdu)
        return seeds
    }

    static func bleSocket() -> [[UInt8]] {
        let hash: [UInt8] = [1, 2, 3]
        var seeds: [[UInt8]] = [
            [0] + BleSocketPacket.introduction(serviceIDHash: hash).encodedBytes,
            [0] + BleSocketPacket.acknowledgement(serviceIDHash: hash, receivedSize: 300).encodedBytes,
            [0] + BleSocketPacket.disconnection(serviceIDHash: hash).encodedBytes,
            [0] + hash + [0, 0, 0, 2, 8, 1],
            [1, 0x03], [1, 0x17], [1, 0x01, 0x00, 0x03] + hash,
            [2, 5] + BleL2CAPFraming.frame([0x17]),
            [3] + WeavePacket(counter: 0, .connectionRequest(minVersion: 1, maxVersion: 1, maxPacketSize: 0, data: [])).encodedBytes,
            [3] + WeavePacket(counter: 1, .data(isFirst: true, isLast: true, payload: hash + [9])).encodedBytes,
        ]
        // A server socket over Weave: request, then the introduction as one message.
        var weave: [UInt8] = [4, 0, 30]
        let request = WeavePacket(counter: 0, .connectionRequest(minVersion: 1, maxVersion: 1, maxPacketSize: 30, data: [])).encodedBytes
        weave += [UInt8(request.count)] + request
        let intro = WeavePacket(counter: 1, .data(isFirst: true, isLast: true, payload: BleSocketPacket.introduction(serviceIDHash: hash).encodedBytes)).encodedBytes
        weave += [UInt8(intro.count)] + intro
        seeds.append(weave)
        return seeds
    }

    static func att() -> [[UInt8]] {
        let pdus: [ATTPDU] = [
            .exchangeMTURequest(mtu: 517),
            .findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: [0xF3, 0xFE]),
            .readByTypeRequest(start: 1, end: 0xFFFF, type: BLEUUID(0x2803)),
            .findInformationRequest(start: 1, end: 0xFFFF),
            .readRequest(handle: 8), .readBlobRequest(handle: 8, offset: 22),
            .writeRequest(handle: 6, value: [2, 0]), .writeRequest(handle: 3, value: [0x80, 0, 1, 0, 1, 0, 0]),
            .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: BLEUUID(0x2800)),
        ]
        var seeds = pdus.map { [0] + $0.encodedBytes }
        var conversation: [UInt8] = [1]
        for pdu in pdus { conversation += [UInt8(pdu.encodedBytes.count)] + pdu.encodedBytes }
        seeds.append(conversation)
        return seeds
    }

    // MARK: - Messages and beacons

    static func messagesEnvelopes() -> [[UInt8]] {
        let small = Message(content: Data("hi".utf8), namespace: "ns", type: "chat")
        let large = Message(content: Data(repeating: 7, count: 500), namespace: "ns", type: "file")
        return [
            MessageEnvelope.message(small).bytes,
            MessageEnvelope.advertisement(for: large).bytes,
            MessageEnvelope.fetchRequest.bytes,
        ]
    }

    static func beacons() -> [[UInt8]] {
        let uid: [UInt8] = [0x00, 0xEB] + Array(1...10) + Array(11...16) + [0, 0]
        let url: [UInt8] = [0x10, 0xEB, 0x03] + Array("example".utf8) + [0x07]
        let tlm: [UInt8] = [0x20, 0x00, 0x0B, 0xB8, 0x15, 0x80, 0, 0, 0x10, 0, 0, 0, 0x20, 0]
        let eid: [UInt8] = [0x30, 0xEB] + Array(1...8)
        let iBeacon: [UInt8] = [0x4C, 0x00, 0x02, 0x15] + Array(1...16) + [0, 1, 0, 2, 0xC5]
        let altBeacon: [UInt8] = [0x18, 0x01, 0xBE, 0xAC] + Array(1...20) + [0xC5, 0x00]
        func serviceData(_ frame: [UInt8]) -> [UInt8] { [UInt8(frame.count + 3), 0x16, 0xAA, 0xFE] + frame }
        let advertising = [0x02, 0x01, 0x06] + serviceData(uid) + [UInt8(iBeacon.count + 1), 0xFF] + iBeacon
        return [
            [0] + advertising,
            [0] + serviceData(url),
            [1] + uid, [1] + url, [1] + tlm, [1] + eid,
            [2] + iBeacon, [2] + altBeacon,
            [3, 0xAA, 0xFE] + url,
        ]
    }

    // MARK: - Connection state machine

    static func connectionStateMachine() -> [[UInt8]] {
        func step(_ operation: UInt8, _ frame: ProtoOfflineFrame) -> [UInt8] {
            let body = OfflineFrames.serialize(frame)
            return [operation] + le16(body.count) + body
        }
        let accept: [UInt8] = [12 | 0x10, 0, 0]
        let payloadSteps = step(0, OfflineFrames.payloadData(header: bytesHeader, offset: 0, body: Data([1, 2, 3]), index: 0, isLast: true))
            + step(0, OfflineFrames.payloadData(header: fileHeader, offset: 0, body: Data("hel".utf8), index: 0, isLast: false))
            + step(0, OfflineFrames.payloadData(header: fileHeader, offset: 3, body: Data("lo".utf8), index: 1, isLast: false))
            + step(0, OfflineFrames.payloadData(header: fileHeader, offset: 5, body: nil, index: 2, isLast: true))
            + step(0, OfflineFrames.keepAlive(ack: false, sequenceNumber: 1))
        let upgradeSteps = step(0, OfflineFrames.upgradePathAvailableWifiLan(addresses: [[192, 168, 1, 20]], port: 45_000))
            + [14 | 0x10, 0, 0]
            + step(0, OfflineFrames.lastWriteToPriorChannel()) + step(0, OfflineFrames.safeToClosePriorChannel())
        let request = step(0, offlineFrames()[0])
        return [
            [0x06] + accept + payloadSteps + step(0, OfflineFrames.disconnection()),
            [0x07] + accept + payloadSteps + upgradeSteps,
            [0x0E] + accept + upgradeSteps,
            [0x02] + step(0, OfflineFrames.keepAlive(ack: false, sequenceNumber: 1)) + accept
                + step(0, OfflineFrames.connectionResponse(accept: true)) + payloadSteps,
            [0x06] + [12, 0, 0],
            [0x00] + request + [0, 4, 0, 1, 2, 3, 4],
        ]
    }

    static func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF)] }

    // MARK: - Quick Share

    /// Endpoint info, a beacon, each frame kind, and a receiver conversation (mode byte first, as the target reads).
    static func quickShare() -> [[UInt8]] {
        guard let info = try? QuickShareEndpointInfo(
            deviceType: .laptop, salt: [1, 2], encryptedMetadataKey: Array(repeating: 7, count: 14), deviceName: "Desk",
            records: [.init(type: 2, value: [1])])
        else { return [] }
        var file = ProtoSharingFileMetadata()
        file.name = "a.bin"
        file.size = 3
        file.payloadID = 11
        file.id = 1
        var introduction = ProtoSharingIntroduction()
        introduction.files = [file]
        let frames: [QuickShareFrame] = [
            .pairedKeyEncryption(signedData: Array(repeating: 1, count: 72), secretIDHash: Array(repeating: 2, count: 6)),
            .pairedKeyResult(.unable), .introduction(introduction), .response(.accept), .cancel,
        ]
        var seeds: [[UInt8]] = [[0] + info.bytes, [1] + (try! QuickShareFastInitBeacon(
            typeValue: 0, adjustedTxPower: 0x42, salt: 9, secretIDHash: [1, 2, 3, 4, 5, 6, 7, 8])).bytes]
        seeds += frames.map { [2] + $0.bytes }
        // A receiver: PKE, PKR, INTRODUCTION (bytes inputs: selector 0, payload ID, 16-bit length, frame), accept,
        // then the file starts and finishes.
        var conversation: [UInt8] = [3, 0]
        for frame in frames.prefix(3) {
            let bytes = frame.bytes
            conversation += [0, 0, UInt8(bytes.count & 0xFF), UInt8(bytes.count >> 8)] + bytes
        }
        conversation += [5, 0, 3, 11, 4, 4, 11, 0]
        seeds.append(conversation)
        return seeds
    }

    // MARK: - D-Bus

    /// Signals as bluetoothd, the bus daemon and a forger send them, each after a mode byte (0: org.bluez owned by
    /// :1.7; 1: followed, no owner).
    static func dbusSignals() -> [[UInt8]] {
        let device: [String: DBusValue] = [
            "Address": .string("C0:00:00:00:00:AD"), "AddressType": .string("random"), "RSSI": .int16(-50),
            "ServiceData": .properties([BlueZ.uuid(0xFEF3): .bytes([0xCA, 0xFE])]),
            "ManufacturerData": .dictionary(
                keySignature: "q", valueSignature: "v", [DBusDictionaryEntry(key: .uint16(0x4C), value: .variant(.bytes([2, 21])))]),
        ]
        let signals: [(String, String, String, String, [DBusValue])] = [
            (":1.7", "/", BlueZ.objectManagerInterface, "InterfacesAdded",
             [.objectPath("/org/bluez/hci0/dev_C0_00_00_00_00_AD"), .interfaces([BlueZ.deviceInterface: device])]),
            (":1.7", "/", BlueZ.objectManagerInterface, "InterfacesRemoved",
             [.objectPath("/org/bluez/hci0/dev_C0_00_00_00_00_AD"), .strings([BlueZ.deviceInterface])]),
            (":1.7", "/org/bluez/hci0", BlueZ.propertiesInterface, "PropertiesChanged",
             [.string(BlueZ.adapterInterface), .properties(["Powered": .boolean(false)]), .strings([])]),
            (":1.7", "/org/bluez/hci0/dev_C0_00_00_00_00_AD", BlueZ.propertiesInterface, "PropertiesChanged",
             [.string(BlueZ.deviceInterface), .properties(["RSSI": .int16(-40)]), .strings([])]),
            ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
             [.string(BlueZ.service), .string(":1.7"), .string("")]),
            (":1.66", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
             [.string(BlueZ.service), .string(":1.7"), .string(":1.66")]),
            (":1.66", "/", BlueZ.objectManagerInterface, "InterfacesAdded",
             [.objectPath("/org/bluez/hci0/dev_C0_00_00_00_00_66"), .interfaces([BlueZ.deviceInterface: device])]),
        ]
        var seeds: [[UInt8]] = []
        for (index, (sender, path, interface, member, arguments)) in signals.enumerated() {
            guard let bytes = dbusSignalBytes(sender: sender, path: path, interface: interface, member: member, arguments: arguments)
            else { continue }
            seeds.append([UInt8(index % 2)] + bytes)
        }
        return seeds
    }
}
