import Foundation
import NearbyWire
import SwiftProtobuf

/// One Quick Share frame as the session machine sees it: decoded from (or to be encoded into) the bytes of a
/// Nearby Connections BYTES payload.
package enum QuickShareFrame: Sendable, Equatable {
    /// The sender's offer (not yet checked against limits: ``QuickShareOfferValidator`` does that).
    case introduction(ProtoSharingIntroduction)
    /// The receiver's answer.
    case response(ProtoSharingResponse.Status)
    /// A paired key encryption frame.
    case pairedKeyEncryption(signedData: [UInt8], secretIDHash: [UInt8])
    /// A paired key result.
    case pairedKeyResult(ProtoSharingPairedKeyResult.Status)
    /// Either side gives up.
    case cancel
    /// A frame type the session ignores (certificate info, progress update, bindings, or a type from a later
    /// version), by its wire value.
    case ignored(type: Int)

    /// The largest frame accepted: a BYTES payload's limit.
    package static let maxEncodedLength = 1_047_552

    /// The frame's name in logs and errors (`INTRODUCTION`, …).
    package var name: String {
        switch self {
        case .introduction: "INTRODUCTION"
        case .response: "RESPONSE"
        case .pairedKeyEncryption: "PAIRED_KEY_ENCRYPTION"
        case .pairedKeyResult: "PAIRED_KEY_RESULT"
        case .cancel: "CANCEL"
        case .ignored(let type): "frame type \(type)"
        }
    }

    /// Decodes the bytes of one BYTES payload.
    /// - Throws: `NearbyError` `.invalidFrame` when the bytes are not a `Frame` protobuf of version 1 with a type,
    ///   a typed frame lacks its body, or the bytes exceed ``maxEncodedLength``.
    package init(decoding bytes: [UInt8]) throws(NearbyError) {
        guard bytes.count <= Self.maxEncodedLength else {
            throw NearbyError(.invalidFrame, "a Quick Share frame of \(bytes.count) bytes is over the \(Self.maxEncodedLength)-byte limit")
        }
        let frame: ProtoSharingFrame
        do {
            frame = try ProtoSharingFrame(serializedBytes: bytes)
        } catch {
            throw NearbyError(.invalidFrame, "not a Quick Share frame: \(error)", cause: error)
        }
        guard frame.version == .v1, frame.hasV1 else {
            throw NearbyError(.invalidFrame, "a Quick Share frame of version \(frame.version.rawValue) (only version 1 is known)")
        }
        let v1 = frame.v1
        guard v1.hasType else {
            // A type this version does not know lands in the unknown fields (proto2 enums): skip the frame.
            if let type = Self.unknownType(Array(v1.unknownFields.data)) {
                self = .ignored(type: type)
                return
            }
            throw NearbyError(.invalidFrame, "a Quick Share frame without a type")
        }
        switch v1.type {
        case .introduction:
            guard v1.hasIntroduction else { throw NearbyError(.invalidFrame, "an INTRODUCTION frame without its body") }
            self = .introduction(v1.introduction)
        case .response:
            guard v1.hasResponse, v1.response.hasStatus else {
                throw NearbyError(.invalidFrame, "a RESPONSE frame without a status")
            }
            self = .response(v1.response.status)
        case .pairedKeyEncryption:
            guard v1.hasPairedKeyEncryption else {
                throw NearbyError(.invalidFrame, "a PAIRED_KEY_ENCRYPTION frame without its body")
            }
            self = .pairedKeyEncryption(
                signedData: Array(v1.pairedKeyEncryption.signedData),
                secretIDHash: Array(v1.pairedKeyEncryption.secretIDHash))
        case .pairedKeyResult:
            guard v1.hasPairedKeyResult else { throw NearbyError(.invalidFrame, "a PAIRED_KEY_RESULT frame without its body") }
            self = .pairedKeyResult(v1.pairedKeyResult.status)
        case .cancel:
            self = .cancel
        case .unknownFrameType:
            throw NearbyError(.invalidFrame, "a Quick Share frame of unknown type 0")
        default:
            self = .ignored(type: v1.type.rawValue)
        }
    }

    /// The encoded `Frame` (version 1).
    package var bytes: [UInt8] {
        var v1 = ProtoSharingV1Frame()
        switch self {
        case .introduction(let introduction):
            v1.type = .introduction
            v1.introduction = introduction
        case .response(let status):
            v1.type = .response
            var response = ProtoSharingResponse()
            response.status = status
            v1.response = response
        case .pairedKeyEncryption(let signedData, let secretIDHash):
            v1.type = .pairedKeyEncryption
            var body = ProtoSharingPairedKeyEncryption()
            body.signedData = Data(signedData)
            body.secretIDHash = Data(secretIDHash)
            v1.pairedKeyEncryption = body
        case .pairedKeyResult(let status):
            v1.type = .pairedKeyResult
            var body = ProtoSharingPairedKeyResult()
            body.status = status
            v1.pairedKeyResult = body
        case .cancel:
            v1.type = .cancel
        case .ignored(let type):
            v1.type = ProtoSharingV1Frame.FrameType(rawValue: type) ?? .unknownFrameType
        }
        var frame = ProtoSharingFrame()
        frame.version = .v1
        frame.v1 = v1
        // Serializing a message built from set fields cannot fail.
        return (try? frame.serializedBytes()) ?? []
    }

    /// The value of field 1 (a varint) when it leads `unknownFields`: the type of a frame from a later version.
    private static func unknownType(_ bytes: [UInt8]) -> Int? {
        guard bytes.first == 0x08 else { return nil }
        var value = 0
        var shift = 0
        for byte in bytes.dropFirst().prefix(5) {
            value |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    /// Our paired key encryption frame without account certificates: 72 random bytes of "signed data" and a 6-byte
    /// random secret ID hash, the sizes Google's implementation uses when it cannot sign.
    package static func randomPairedKeyEncryption(using generator: inout some RandomNumberGenerator) -> QuickShareFrame {
        .pairedKeyEncryption(
            signedData: (0..<72).map { _ in UInt8.random(in: .min ... .max, using: &generator) },
            secretIDHash: (0..<6).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}
