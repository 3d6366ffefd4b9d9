import Foundation
import NearbyWire
import SwiftProtobuf
import Testing

struct OfflineFrameBuilderTests {
    private func roundTrip(_ frame: ProtoOfflineFrame) throws -> InboundFrame {
        try OfflineFrameParser.parse(OfflineFrames.serialize(frame))
    }

    @Test("A connection request carries the endpoint info twice, the nonce and explicit mediums", .timeLimit(.minutes(5)))
    func connectionRequest() throws {
        let info: [UInt8] = [0xFF, 0x00, 0x80]  // not UTF-8: field 2 must be bytes
        let frame = OfflineFrames.connectionRequest(.init(
            endpointID: "ABCD", endpointInfo: info, nonce: -5, mediums: [.wifiLan],
            keepAliveIntervalMillis: 5000, keepAliveTimeoutMillis: 30000))
        #expect(frame.version == .v1 && frame.v1.type == .connectionRequest)
        guard case .connectionRequest(let request) = try roundTrip(frame) else {
            Issue.record("not a request"); return
        }
        #expect(request.endpointID == "ABCD")
        #expect(Array(request.endpointName) == info)
        #expect(Array(request.endpointInfo) == info)
        #expect(request.nonce == -5)
        #expect(request.mediums == [.wifiLan])
        #expect(request.keepAliveIntervalMillis == 5000 && request.keepAliveTimeoutMillis == 30000)
        #expect(request.mediumMetadata.apFrequency == -1)
    }

    @Test("Zero keep-alive values are left out of the request", .timeLimit(.minutes(5)))
    func requestWithoutKeepAlive() throws {
        let frame = OfflineFrames.connectionRequest(.init(endpointID: "ABCD", endpointInfo: [1], nonce: 1, mediums: []))
        #expect(!frame.v1.connectionRequest.hasKeepAliveIntervalMillis)
        #expect(!frame.v1.connectionRequest.hasKeepAliveTimeoutMillis)
    }

    @Test("Mediums are written unpacked, as reference peers do, and read packed or unpacked", .timeLimit(.minutes(5)))
    func unpackedMediums() throws {
        let frame = OfflineFrames.connectionRequest(
            .init(endpointID: "ABCD", endpointInfo: [1], nonce: 1, mediums: [.wifiLan, .ble]))
        let bytes = try frame.v1.connectionRequest.serializedBytes() as [UInt8]
        // field 5, wire type 0 (varint) = tag 0x28, once per medium.
        #expect(bytes.filter { $0 == 0x28 }.count == 2)
        var packed = try ProtoConnectionRequestFrame(serializedBytes: [0x0A, 0x01, 0x41, 0x12, 0x01, 0x42, 0x2A, 0x02, 0x05, 0x04])
        #expect(packed.mediums == [.wifiLan, .ble])
        packed.mediums = []
        #expect(packed.endpointID == "A")
    }

    @Test("Responses set both the legacy status and the response enum", .timeLimit(.minutes(5)))
    func responses() throws {
        let accept = OfflineFrames.connectionResponse(accept: true).v1.connectionResponse
        #expect(accept.status == 0 && accept.response == .accept && accept.safeToDisconnectVersion == 0)
        #expect(accept.hasSafeToDisconnectVersion && !accept.hasOsInfo)
        let reject = OfflineFrames.connectionResponse(accept: false).v1.connectionResponse
        #expect(reject.status == 9 && reject.response == .reject)
    }

    @Test("Data and last chunks pass validation; the last chunk has no body", .timeLimit(.minutes(5)))
    func payloadChunks() throws {
        let header = OfflineFrames.payloadHeader(id: 77, type: .bytes, totalSize: 3)
        let data = OfflineFrames.payloadData(header: header, offset: 0, body: Data([1, 2, 3]), index: 0, isLast: false)
        let last = OfflineFrames.payloadData(header: header, offset: 3, body: nil, index: 1, isLast: true)
        guard case .payloadTransfer(let first) = try roundTrip(data),
            case .payloadTransfer(let final) = try roundTrip(last)
        else { Issue.record("not payload frames"); return }
        #expect(first.payloadChunk.body == Data([1, 2, 3]) && first.payloadChunk.flags == 0)
        #expect(!final.payloadChunk.hasBody && final.payloadChunk.flags == 1 && final.payloadChunk.index == 1)
    }

    @Test("Control, keep-alive and disconnection frames round-trip", .timeLimit(.minutes(5)))
    func otherFrames() throws {
        let header = OfflineFrames.payloadHeader(id: 5, type: .file, totalSize: 100, fileName: "a.txt")
        guard case .payloadTransfer(let control) = try roundTrip(
            OfflineFrames.payloadControl(header: header, event: .payloadCanceled, offset: 50))
        else { Issue.record("not control"); return }
        #expect(control.packetType == .control && control.controlMessage.event == .payloadCanceled)
        guard case .keepAlive(let keepAlive) = try roundTrip(OfflineFrames.keepAlive(ack: true, sequenceNumber: 9))
        else { Issue.record("not keep-alive"); return }
        #expect(keepAlive.ack && keepAlive.seqNum == 9)
        guard case .disconnection(let bye) = try roundTrip(OfflineFrames.disconnection()) else {
            Issue.record("not disconnection"); return
        }
        #expect(bye.hasRequestSafeToDisconnect && !bye.requestSafeToDisconnect && !bye.ackSafeToDisconnect)
    }

    @Test("PAYLOAD_ERROR's reason is our field 1000 (a string): known bytes, and a parser without it skips it", .timeLimit(.minutes(5)))
    func payloadErrorReason() throws {
        let header = OfflineFrames.payloadHeader(id: 5, type: .file, totalSize: 100)
        let frame = OfflineFrames.payloadControl(header: header, event: .payloadError, offset: 7, reason: "disk full")
        let control = frame.v1.payloadTransfer.controlMessage
        // event = 1 (08 01), offset = 7 (10 07), field 1000 length-delimited: tag (1000 << 3 | 2) = C2 3E, 9 bytes.
        #expect(try control.serializedBytes() as [UInt8] == [0x08, 0x01, 0x10, 0x07, 0xC2, 0x3E, 0x09] + Array("disk full".utf8))
        guard case .payloadTransfer(let parsed) = try roundTrip(frame) else { Issue.record("not control"); return }
        #expect(parsed.controlMessage.swiftNearbyReason == "disk full")
        // Without the reason (as other implementations send it) it is absent, not empty.
        let without = try ProtoPayloadTransferFrame.ControlMessage(serializedBytes: [0x08, 0x01, 0x10, 0x07])
        #expect(without.event == .payloadError && without.offset == 7 && !without.hasSwiftNearbyReason)
    }

    @Test("Bandwidth upgrade frames are well formed", .timeLimit(.minutes(5)))
    func bandwidthUpgrade() throws {
        let offer = OfflineFrames.upgradePathAvailableWifiLan(
            addresses: [[10, 0, 0, 2], [0x20, 0x01] + [UInt8](repeating: 0, count: 13) + [1]], port: 4000)
        guard case .bandwidthUpgradeNegotiation(let negotiation) = try roundTrip(offer) else {
            Issue.record("not BWU"); return
        }
        let socket = negotiation.upgradePathInfo.wifiLanSocket
        #expect(negotiation.upgradePathInfo.supportsClientIntroductionAck)
        #expect(socket.addressCandidates.map(\.ipAddress.count) == [16, 4], "IPv6 first, then IPv4")
        #expect(Array(socket.ipAddress) == [10, 0, 0, 2] && socket.wifiPort == 4000)
        for frame in [
            OfflineFrames.upgradeFailure(negotiation.upgradePathInfo), OfflineFrames.clientIntroduction(endpointID: "WXYZ"),
            OfflineFrames.clientIntroductionAck(), OfflineFrames.lastWriteToPriorChannel(),
            OfflineFrames.safeToClosePriorChannel(),
        ] {
            #expect(throws: Never.self) { try roundTrip(frame) }
        }
    }
}
