import NearbyTestSupport
import Foundation
import NearbyWire
import SwiftProtobuf
import Testing

struct OfflineFrameValidatorTests {
    typealias Header = ProtoPayloadTransferFrame.PayloadHeader

    private func expectInvalid(
        _ frame: ProtoOfflineFrame, policy: OfflineFrameValidator.Policy = .init(),
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = #expect(throws: NearbyError.self, sourceLocation: sourceLocation) {
            try OfflineFrameParser.parse(OfflineFrames.serialize(frame), policy: policy)
        }
        #expect(error?.code == .invalidFrame, sourceLocation: sourceLocation)
    }

    private func data(_ header: Header, offset: Int64 = 0, body: Data? = Data([1]), last: Bool = false)
        -> ProtoOfflineFrame
    {
        OfflineFrames.payloadData(header: header, offset: offset, body: body, index: 0, isLast: last)
    }

    @Test("Frames without V1 or without a type are invalid", .timeLimit(.minutes(5)))
    func envelope() throws {
        var frame = OfflineFrames.keepAlive(ack: false, sequenceNumber: 1)
        frame.version = .unknownVersion
        expectInvalid(frame)
        var untyped = OfflineFrames.keepAlive(ack: false, sequenceNumber: 1)
        untyped.v1.clearType()
        expectInvalid(untyped)
        var missing = OfflineFrames.connectionResponse(accept: true)
        missing.v1.clearConnectionResponse()
        expectInvalid(missing)
    }

    @Test("Bytes that are not a protobuf are malformed, not invalid", .timeLimit(.minutes(5)))
    func malformed() {
        let error = #expect(throws: NearbyError.self) { try OfflineFrameParser.parse([0xFF, 0xFF, 0xFF]) }
        #expect(error?.code == .malformedMessage)
    }

    @Test("A connection request needs an endpoint ID and a name", .timeLimit(.minutes(5)))
    func connectionRequestRules() {
        expectInvalid(OfflineFrames.connectionRequest(.init(endpointID: "", endpointInfo: [1], nonce: 0, mediums: [])))
        expectInvalid(OfflineFrames.connectionRequest(.init(endpointID: "ABCD", endpointInfo: [], nonce: 0, mediums: [])))
    }

    @Test("Payload transfer header and size rules", .timeLimit(.minutes(5)))
    func headerRules() {
        var noHeader = data(OfflineFrames.payloadHeader(id: 1, type: .bytes, totalSize: 1))
        noHeader.v1.payloadTransfer.clearPayloadHeader()
        expectInvalid(noHeader)
        var noSize = OfflineFrames.payloadHeader(id: 1, type: .bytes, totalSize: 1)
        noSize.clearTotalSize()
        expectInvalid(data(noSize))
        expectInvalid(data(OfflineFrames.payloadHeader(id: 1, type: .stream, totalSize: -2)))
        #expect(throws: Never.self) {
            try OfflineFrameParser.parse(OfflineFrames.serialize(
                self.data(OfflineFrames.payloadHeader(id: 1, type: .stream, totalSize: -1), offset: 5_000)))
        }
        var ack = noSize
        ack.clearTotalSize()
        var ackFrame = data(ack)
        ackFrame.v1.payloadTransfer.packetType = .payloadAck
        ackFrame.v1.payloadTransfer.clearPayloadChunk()
        #expect(throws: Never.self) { try OfflineFrameParser.parse(OfflineFrames.serialize(ackFrame)) }
    }

    @Test("File names with separators, colons or NUL and parent folders with .. are invalid", .timeLimit(.minutes(5)), arguments: [
        ("a/b", ""), ("a\\b", ""), ("c:x", ""), ("nul\u{0}x", ""), ("ok.txt", "../up"), ("ok.txt", "d:"),
        ("ok.txt", "x\u{0}"),
        // A combining mark makes "/\u{301}" (or ".\u{301}") one Character; the bytes still hold "/" (or "..").
        ("../\u{301}x", ""), ("a\\\u{301}b", ""), ("a:\u{301}", ""), ("ok.txt", "..\u{301}"), ("ok.txt", "x/..\u{301}/y"),
    ])
    func fileNameRules(name: String, folder: String) {
        let header = OfflineFrames.payloadHeader(
            id: 1, type: .file, totalSize: 10, fileName: name, parentFolder: folder.isEmpty ? nil : folder)
        expectInvalid(data(header))
    }

    @Test("Legal file names and nested parent folders pass", .timeLimit(.minutes(5)))
    func legalFileNames() throws {
        let header = OfflineFrames.payloadHeader(
            id: 1, type: .file, totalSize: 10, fileName: "photo 1.jpg", parentFolder: "trip/day.1")
        #expect(throws: Never.self) { try OfflineFrameParser.parse(OfflineFrames.serialize(self.data(header))) }
    }

    @Test("Data chunk rules: flags, body, offset in range", .timeLimit(.minutes(5)))
    func dataChunkRules() {
        let header = OfflineFrames.payloadHeader(id: 1, type: .bytes, totalSize: 10)
        var noFlags = data(header)
        noFlags.v1.payloadTransfer.payloadChunk.clearFlags()
        expectInvalid(noFlags)
        expectInvalid(data(header, body: nil, last: false))
        expectInvalid(data(header, offset: -1))
        expectInvalid(data(header, offset: 11))
        var noOffset = data(header)
        noOffset.v1.payloadTransfer.payloadChunk.clearOffset()
        expectInvalid(noOffset)
        var noChunk = data(header)
        noChunk.v1.payloadTransfer.clearPayloadChunk()
        expectInvalid(noChunk)
        var noType = data(header)
        noType.v1.payloadTransfer.clearPacketType()
        expectInvalid(noType)
    }

    @Test("Control message rules: present, offset in range", .timeLimit(.minutes(5)))
    func controlRules() {
        let header = OfflineFrames.payloadHeader(id: 1, type: .file, totalSize: 10)
        expectInvalid(OfflineFrames.payloadControl(header: header, event: .payloadCanceled, offset: 11))
        expectInvalid(OfflineFrames.payloadControl(header: header, event: .payloadCanceled, offset: -1))
        var missing = OfflineFrames.payloadControl(header: header, event: .payloadError, offset: 0)
        missing.v1.payloadTransfer.clearControlMessage()
        expectInvalid(missing)
    }

    @Test("Wi-Fi LAN upgrade paths need a usable, non-loopback address", .timeLimit(.minutes(5)))
    func wifiLanUpgrade() throws {
        expectInvalid(OfflineFrames.upgradePathAvailableWifiLan(addresses: [], port: 1000))
        expectInvalid(OfflineFrames.upgradePathAvailableWifiLan(addresses: [[127, 0, 0, 1]], port: 1000))
        expectInvalid(OfflineFrames.upgradePathAvailableWifiLan(addresses: [[169, 254, 1, 1]], port: 1000))
        expectInvalid(OfflineFrames.upgradePathAvailableWifiLan(addresses: [[1, 2, 3]], port: 1000))
        expectInvalid(OfflineFrames.upgradePathAvailableWifiLan(
            addresses: [[0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1]], port: 1000))
        let loopback = OfflineFrames.upgradePathAvailableWifiLan(addresses: [[127, 0, 0, 1]], port: 1000)
        #expect(throws: Never.self) {
            try OfflineFrameParser.parse(
                OfflineFrames.serialize(loopback), policy: .init(allowsLoopbackUpgradeAddresses: true))
        }
    }

    @Test("Other upgrade mediums need their credentials", .timeLimit(.minutes(5)))
    func otherUpgradeMediums() {
        func offer(_ fill: (inout ProtoBandwidthUpgradeNegotiationFrame.UpgradePathInfo) -> Void) -> ProtoOfflineFrame {
            var frame = OfflineFrames.upgradePathAvailableWifiLan(addresses: [[10, 0, 0, 1]], port: 1)
            fill(&frame.v1.bandwidthUpgradeNegotiation.upgradePathInfo)
            return frame
        }
        expectInvalid(offer { $0.clearMedium() })
        expectInvalid(offer { $0.medium = .wifiHotspot })
        expectInvalid(offer {
            $0.medium = .wifiHotspot
            $0.wifiHotspotCredentials.ssid = "net"
            $0.wifiHotspotCredentials.password = "short"
            $0.wifiHotspotCredentials.gateway = "192.168.1.1"
            $0.wifiHotspotCredentials.port = 1
        })
        expectInvalid(offer {
            $0.medium = .wifiDirect
            $0.wifiDirectCredentials.ssid = "NOTDIRECT-ab"
            $0.wifiDirectCredentials.password = "longenough"
            $0.wifiDirectCredentials.frequency = 2412
        })
        expectInvalid(offer { $0.medium = .bluetooth; $0.bluetoothCredentials.serviceName = "x" })
        expectInvalid(offer { $0.medium = .webRtc })
        let validHotspot = offer {
            $0.medium = .wifiHotspot
            $0.wifiHotspotCredentials.ssid = "net"
            $0.wifiHotspotCredentials.password = "longenough"
            $0.wifiHotspotCredentials.gateway = "192.168.1.1"
            $0.wifiHotspotCredentials.port = 8080
        }
        #expect(throws: Never.self) { try OfflineFrameParser.parse(OfflineFrames.serialize(validHotspot)) }
        let validDirect = offer {
            $0.medium = .wifiDirect
            $0.wifiDirectCredentials.ssid = "DIRECT-ab-linux"
            $0.wifiDirectCredentials.password = "longenough"
            $0.wifiDirectCredentials.frequency = -1
        }
        #expect(throws: Never.self) { try OfflineFrameParser.parse(OfflineFrames.serialize(validDirect)) }
    }

    @Test("A client introduction needs an endpoint ID", .timeLimit(.minutes(5)))
    func clientIntroduction() {
        var frame = OfflineFrames.clientIntroduction(endpointID: "ABCD")
        frame.v1.bandwidthUpgradeNegotiation.clientIntroduction.clearEndpointID()
        expectInvalid(frame)
        var noEvent = OfflineFrames.lastWriteToPriorChannel()
        noEvent.v1.bandwidthUpgradeNegotiation.clearEventType()
        expectInvalid(noEvent)
    }

    @Test("Random and mutated frames never crash the parser and fail with a NearbyError", .timeLimit(.minutes(5)))
    func hostileFrames() throws {
        var generator = SeededGenerator(seed: 5)
        let samples: [[UInt8]] = [
            OfflineFrames.connectionRequest(.init(endpointID: "ABCD", endpointInfo: [1, 2], nonce: 3, mediums: [.wifiLan])),
            OfflineFrames.connectionResponse(accept: true),
            OfflineFrames.payloadData(
                header: OfflineFrames.payloadHeader(id: 1, type: .file, totalSize: 4, fileName: "f"),
                offset: 0, body: Data([1, 2, 3, 4]), index: 0, isLast: false),
            OfflineFrames.upgradePathAvailableWifiLan(addresses: [[10, 0, 0, 1]], port: 9),
            OfflineFrames.keepAlive(ack: false, sequenceNumber: 1),
        ].map(OfflineFrames.serialize)
        for round in 0..<10_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = generator.bytes(Int(generator.next() % 120))
            } else {
                bytes = samples[round % samples.count]
                let index = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[index] ^= UInt8(1 << (generator.next() % 8))
                case 1: bytes = Array(bytes.prefix(index))
                default: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: index)
                }
            }
            do {
                _ = try OfflineFrameParser.parse(bytes)
            } catch {
                #expect(error.code == .malformedMessage || error.code == .invalidFrame)
            }
        }
    }
}
