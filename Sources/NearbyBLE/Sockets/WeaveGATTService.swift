import Logging
import NearbyWire

/// The advertiser's GATT service 0xFEF3: the Weave socket's two characteristics (and the advertisement slots when
/// the advertisement is served over GATT), with one ``WeaveServerLink`` per client that connects. Each link that
/// completes the Weave handshake becomes a BLE socket (``BLESocketChannel``) handed to `onSocket`.
///
/// ``run()`` consumes the server's events in order until the server stops; its owner (the advertising session)
/// awaits it.
package final class WeaveGATTService: Sendable {
    /// The GATT services to publish: 0xFEF3 with the Weave characteristics and the given slot values.
    package static func services(slots: [[UInt8]] = []) -> [GATTServiceDefinition] {
        var characteristics = [
            GATTCharacteristicDefinition(uuid: NearbyGATTUUIDs.weaveClientToServer, properties: [.write]),
            GATTCharacteristicDefinition(uuid: NearbyGATTUUIDs.weaveServerToClient, properties: [.indicate]),
        ]
        for (slot, value) in slots.enumerated() {
            characteristics.append(GATTCharacteristicDefinition(
                uuid: NearbyGATTUUIDs.advertisementSlot(slot), properties: [.read], value: value))
        }
        return [GATTServiceDefinition(uuid: NearbyGATTUUIDs.service, characteristics: characteristics)]
    }

    private let server: any BLEGATTServerHandle
    private let serviceIDHashes: Set<[UInt8]>
    private let onSocket: @Sendable (BLESocketChannel) -> Void
    private let logger: Logger

    /// A service on a published server, accepting sockets for these service hashes.
    package init(
        server: any BLEGATTServerHandle, serviceIDHashes: Set<[UInt8]>, logger: Logger,
        onSocket: @escaping @Sendable (BLESocketChannel) -> Void
    ) {
        self.server = server
        self.serviceIDHashes = serviceIDHashes
        self.onSocket = onSocket
        self.logger = logger
    }

    /// Serves clients until the server's events end (``stop()``, or the radio failed).
    package func run() async {
        var links: [GATTPeer: WeaveServerLink] = [:]
        for await event in server.events {
            switch event {
            case .written(let peer, let uuid, let value, let needsResponse):
                guard uuid == NearbyGATTUUIDs.weaveClientToServer else {
                    if needsResponse { await server.respondToWrite(peer) }
                    continue
                }
                let link: WeaveServerLink
                if let existing = links[peer] {
                    link = existing
                } else {
                    link = WeaveServerLink(server: server, peer: peer, maxPacketSize: await server.maxValueLength(to: peer))
                    links[peer] = link
                }
                if await link.receivePacket(value, needsResponse: needsResponse) {
                    logger.debug("Weave socket open", metadata: ["peer": "\(peer)"])
                    onSocket(BLESocketChannel.server(link: link, serviceIDHashes: serviceIDHashes))
                }
            case .subscriptionChanged(let peer, let uuid, let indications):
                logger.trace("GATT subscription", metadata: ["peer": "\(peer)", "uuid": "\(uuid)", "indications": "\(indications)"])
            case .disconnected(let peer):
                await links.removeValue(forKey: peer)?.peerDisconnected()
            }
        }
        for link in links.values { await link.peerDisconnected() }
    }

    /// Replaces an advertisement slot's value.
    package func updateSlot(_ slot: Int, value: [UInt8]) async {
        await server.updateValue(value, of: NearbyGATTUUIDs.advertisementSlot(slot))
    }

    /// Removes the GATT server, which ends ``run()``. Open sockets stay open.
    package func stop() async {
        await server.stop()
    }
}
