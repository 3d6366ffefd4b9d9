extension MediumDriver {
    /// Mediums whose channels do not name the service ignore it: this default calls `connect(to:)`.
    public func connect(to route: EndpointRoute, serviceID: String) async throws -> any EndpointChannel {
        try await connect(to: route)
    }
}
