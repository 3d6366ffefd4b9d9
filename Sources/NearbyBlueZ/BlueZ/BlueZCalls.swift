import NearbyCore
import NearbyWire

extension BlueZ {
    /// How long a call to `bluetoothd` (or to the bus on its behalf: AddMatch, GetNameOwner) may take before it
    /// fails with `.timeout`. bluetoothd answers in milliseconds; `RegisterAdvertisement` waits for its own
    /// `GetAll` on our advertisement object and for the kernel (a few seconds on a slow machine).
    package static let callTimeout: Duration = .seconds(25)
}

extension BlueZAdapter {
    /// Calls a method of `bluetoothd` (`org.bluez`), waiting at most ``callTimeout`` (or `timeout`).
    /// - Throws: `.timeout` naming the call when bluetoothd does not answer in time (never a silent wait), or the
    ///   call's own error (`DBusRemoteError` as the cause; see `DBusClient.call`).
    package nonisolated func callBlueZ(
        path: String, interface: String, member: String, arguments: [DBusValue] = [], timeout: Duration? = nil
    ) async throws -> [DBusValue] {
        let limit = timeout ?? callTimeout
        do {
            return try await client.call(
                destination: BlueZ.service, path: path, interface: interface, member: member, arguments: arguments,
                timeout: limit)
        } catch let error as NearbyError where error.code == .timeout {
            let name = interface.split(separator: ".").last.map(String.init) ?? interface
            let why = (error.cause as? DBusRemoteError)?.message ?? error.message
            throw NearbyError(
                .timeout, "bluetoothd did not answer \(name).\(member) on \(path) (waited at most \(limit)): \(why)",
                cause: error)
        }
    }
}
