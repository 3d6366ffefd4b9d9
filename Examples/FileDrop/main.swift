// nearby-file-drop: send a file to a nearby receiver with a Nearby Connections FILE payload.
//
//     swift run nearby-file-drop receive <service-id> <directory>
//     swift run nearby-file-drop send <service-id> <file>
import Foundation
import NearbyConnections

func usage() -> Never {
    FileHandle.standardError.write(Data("usage: nearby-file-drop receive <service-id> <dir> | send <service-id> <file>\n".utf8))
    exit(2)
}

let arguments = CommandLine.arguments
guard arguments.count == 4 else { usage() }
let (mode, serviceID, path) = (arguments[1], arguments[2], arguments[3])

func receive(serviceID: String, path: String) async throws {
    // Advertise, accept every connection, and report each file as it lands in the directory.
    let directory = URL(fileURLWithPath: path, isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let manager = ConnectionManager(
        serviceID: serviceID, strategy: .pointToPoint, options: ConnectionOptions(receiveDirectory: directory))
    let events = manager.events
    let advertiser = Advertiser(connectionManager: manager)
    try await advertiser.startAdvertising(using: Data("file-drop".utf8))
    print("waiting for files in \(directory.path)")
    for await event in events {
        switch event {
        case .connectionRequested(let id, _, let code, _):
            print("connection from \(id), code \(code.digits)")
            try await manager.accept(id)
        case .fileReceived(_, _, let url, _):
            print("received \(url.path)")
        default:
            break
        }
    }
    withExtendedLifetime(advertiser) {}
}

func send(serviceID: String, path: String) async throws {
    // Find the first receiver, connect, send the file, wait for it to arrive, disconnect.
    let file = URL(fileURLWithPath: path)
    let manager = ConnectionManager(serviceID: serviceID, strategy: .pointToPoint)
    let events = manager.events
    let discoverer = Discoverer(connectionManager: manager)
    try await discoverer.startDiscovery()
    var payload: PayloadID?
    loop: for await event in events {
        switch event {
        case .endpointFound(let id, _, _) where payload == nil:
            discoverer.stopDiscovery()
            try await discoverer.requestConnection(to: id, using: Data("sender".utf8))
        case .connectionRequested(let id, _, let code, _):
            print("connecting to \(id), code \(code.digits)")
            try await manager.accept(id)
        case .stateChanged(let id, .connected, _):
            payload = try await manager.sendResource(at: file, withName: file.lastPathComponent, to: id)
        case .transferUpdate(let id, let payloadID, let update, _, true, let bytes, _) where payloadID == payload:
            if update == .success {
                print("sent \(bytes) bytes")
                await manager.disconnect(from: id)
                break loop
            } else if update == .failure || update == .canceled {
                print("transfer \(update)")
                exit(1)
            }
        default:
            break
        }
    }
    await manager.shutdown()
}

switch mode {
case "receive": try await receive(serviceID: serviceID, path: path)
case "send": try await send(serviceID: serviceID, path: path)
default: usage()
}
