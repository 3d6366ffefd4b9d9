// The in-memory medium (and the manual clock) ship in the NearbyTesting product; our own tests use the same code.
@_exported import NearbyTesting
