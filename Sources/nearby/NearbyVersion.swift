/// The version `nearby --version` prints. Bumped by hand with each release of the package.
enum NearbyVersion {
    /// The package's version.
    static let package = "0.11.0"
    /// The line `--version` prints: the version and what it speaks.
    static let text = "nearby \(package) (swift-nearby; Nearby Connections wire protocol)"
}
