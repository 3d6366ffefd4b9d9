// nearby-chat: a chat room over Nearby Messages. Every line you type is published as a message of type "line" in
// the namespace "chat"; short lines travel in the advertisement itself, long ones (over ~120 bytes) are fetched by
// the others over a connection. Your name is published as a "presence" message.
//
//     swift run nearby-chat <service-id> <your-name>
import Foundation
import Logging
import NearbyMessages

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: nearby-chat <service-id> <your-name>\n".utf8))
    exit(2)
}
let (serviceID, name) = (arguments[1], arguments[2])
/// Prints a line at once, even into a pipe.
@Sendable func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

var logger = Logger(label: "nearby-chat")
logger.logLevel = .warning

let manager = MessageManager(
    serviceID: serviceID,
    logger: logger,
    permissionRequest: { .grantForThisRun },  // starting the example is consent for this run
    onBluetoothProblem: { _ in },  // Wi-Fi LAN only until the BLE medium is plugged in
    onMDNSProblem: { say("! mDNS is not available: \($0.message)") })
let strategy = MessageStrategy(mediums: .wifiLAN)

let presence = try await manager.publish(
    Message(text: name, namespace: "chat", type: "presence"), options: PublishOptions(strategy: strategy, ttl: nil))
let subscription = try await manager.subscribe(
    options: SubscribeOptions(strategy: strategy, filter: try .namespacedType("chat", nil), ttl: nil))

// Print what others say. Our own messages are found too (the subscription sees every publisher). Detached: the
// main actor blocks in readLine().
let printer = Task.detached {
    for await event in subscription {
        let text = event.message.text ?? "<\(event.message.content.count) bytes>"
        switch (event.kind, event.message.type) {
        case (.found, "presence"): say("* \(text) is here")
        case (.lost, "presence"): say("* \(text) left")
        case (.found, _): say(text)
        default: break
        }
    }
}

// Keep the last five lines published; older ones are withdrawn.
var published: [Publication] = []
while let line = readLine() {
    guard !line.isEmpty else { continue }
    do {
        let message = Message(text: "\(name): \(line)", namespace: "chat", type: "line")
        published.append(try await manager.publish(message, options: PublishOptions(strategy: strategy)))
        if published.count > 5 { await published.removeFirst().cancel() }
    } catch {
        say("! \(error)")
    }
}
for publication in published { await publication.cancel() }
await presence.cancel()
printer.cancel()
say("* bye")
