import Foundation
import NearbyWire
import SwiftProtobuf

/// Wrapping and unwrapping of the `Ukey2Message` envelope, and alerts.
enum Ukey2Envelope {
    /// A serialized `Ukey2Message` of `type` around `inner`.
    static func wrap(_ type: ProtoUkey2Message.TypeEnum, _ inner: [UInt8]) -> [UInt8] {
        var message = ProtoUkey2Message()
        message.messageType = type
        message.messageData = Data(inner)
        return serialize(message)
    }

    /// A serialized ALERT message.
    static func alert(_ type: ProtoUkey2Alert.AlertType, _ text: String) -> [UInt8] {
        var alert = ProtoUkey2Alert()
        alert.type = type
        alert.errorMessage = text
        return wrap(.alert, serialize(alert))
    }

    /// A failed action that sends `type` as an alert to the peer.
    static func failWithAlert(_ type: ProtoUkey2Alert.AlertType, _ text: String) -> Ukey2Action {
        .fail(alert: alert(type, text), NearbyError(.handshakeFailed, "\(text) (alert \(type))"))
    }

    /// A failed action that sends nothing to the peer.
    static func failSilently(_ text: String, cause: (any Error & Sendable)? = nil) -> Ukey2Action {
        .fail(alert: nil, NearbyError(.handshakeFailed, text, cause: cause))
    }

    /// Describes an ALERT the peer sent as an error.
    static func peerAlertError(_ message: ProtoUkey2Message) -> NearbyError {
        guard let alert = try? ProtoUkey2Alert(serializedBytes: Array(message.messageData)) else {
            return NearbyError(.handshakeAlert, "peer sent an unreadable UKEY2 alert")
        }
        return NearbyError(.handshakeAlert, "peer sent UKEY2 alert \(alert.type): \(alert.errorMessage)")
    }

    static func serialize(_ message: some SwiftProtobuf.Message) -> [UInt8] {
        do {
            return try message.serializedBytes()
        } catch {
            preconditionFailure("UKEY2 message without required fields failed to serialize: \(error)")
        }
    }
}

