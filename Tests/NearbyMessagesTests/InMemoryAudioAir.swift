import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire

@testable import NearbyMessages

/// The "air" of the audio medium for engine-level tests: every player's loop is mixed (with optional Gaussian
/// noise and background sounds) into what every recorder reads, on a `ManualClock`.
///
/// Time moves only through ``run(for:until:)``: in 50 ms steps, each waiting until every open recorder has taken
/// the previous chunk and asks for the next (so the decoder and the found/lost steps are done), then advancing the
/// clock and handing out the next 50 ms of sound.
final class InMemoryAudioAir: Sendable {
    static let chunk = 2_400
    static let step: Duration = .milliseconds(50)

    let clock: ManualClock

    private struct Sound {
        var samples: [Float]
        var start: Int
        var loops: Bool
        var isPlayer: Bool
    }

    private struct State {
        var position = 0
        var nextID = 0
        var sounds: [Int: Sound] = [:]
        var playerWaits: [Int: CheckedContinuation<Void, Never>] = [:]
        var recorders: Set<Int> = []
        var parked: [Int: CheckedContinuation<[Float], any Error>] = [:]
        var parkWaiters: [(atLeast: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var microphoneProblem: AudioDeviceStatus.Problem?
        var speakerProblem: AudioDeviceStatus.Problem?
        var playersMuted = false
        var noiseLevel: Float = 0
        var random = SeededGenerator(seed: 0xA1_2026)

        /// The waiters whose condition holds now: every open recorder waits in `read()`, and enough are open.
        mutating func allParked() -> [CheckedContinuation<Void, Never>] {
            guard parked.count >= recorders.count else { return [] }
            let ready = parkWaiters.filter { $0.atLeast <= recorders.count }.map(\.continuation)
            parkWaiters.removeAll { $0.atLeast <= recorders.count }
            return ready
        }
    }

    private let state = LockedValue(State())

    init(clock: ManualClock) {
        self.clock = clock
    }

    /// The sound I/O of one device in this air.
    var device: any AudioMediumIO { Device(air: self) }

    /// How many players are playing (whether muted or not).
    var playerCount: Int { state.withLock { $0.sounds.values.filter(\.isPlayer).count } }
    /// How many recorders are open.
    var recorderCount: Int { state.withLock { $0.recorders.count } }

    /// Gaussian noise of this standard deviation in every recording.
    func setNoise(_ level: Float) { state.withLock { $0.noiseLevel = level } }
    /// Silences every player (they keep "playing"; nobody hears them) or brings them back.
    func mutePlayers(_ muted: Bool) { state.withLock { $0.playersMuted = muted } }
    /// Adds a background sound from now on (looping or once).
    func addBackground(_ samples: [Float], loops: Bool) {
        state.withLock { state in
            state.nextID += 1
            state.sounds[state.nextID] = Sound(samples: samples, start: state.position, loops: loops, isPlayer: false)
        }
    }

    /// Makes the microphone fail (open and read throw an error with this cause), or work again with `nil`.
    func setMicrophoneProblem(_ problem: AudioDeviceStatus.Problem?) {
        let (failed, waiters) = state.withLock { state -> ([CheckedContinuation<[Float], any Error>], [CheckedContinuation<Void, Never>]) in
            state.microphoneProblem = problem
            guard problem != nil else { return ([], []) }
            let parked = Array(state.parked.values)
            state.parked = [:]
            state.recorders = []
            return (parked, state.allParked())
        }
        for continuation in failed { continuation.resume(throwing: Self.error(problem!)) }
        for waiter in waiters { waiter.resume() }
    }

    /// Makes every new player fail to open, or work again with `nil`.
    func setSpeakerProblem(_ problem: AudioDeviceStatus.Problem?) { state.withLock { $0.speakerProblem = problem } }

    /// Runs the air in 50 ms steps for `duration`, or until `condition` holds (checked before each step); returns
    /// whether `condition` held, waiting up to 10 s of real time after the last step for the tasks it woke (without a
    /// condition: runs the whole `duration` and returns false).
    /// Before each step, waits until at least `recorders` recorders are open and every open one waits for sound.
    @discardableResult
    func run(
        for duration: Duration, recorders: Int = 0, until condition: (@Sendable () -> Bool)? = nil
    ) async -> Bool {
        var elapsed: Duration = .zero
        while elapsed < duration {
            if condition?() == true { return true }
            await step(recorders: recorders)
            elapsed += Self.step
        }
        await waitForRecorders(atLeast: recorders)
        guard let condition else { return false }
        return await eventually(10, condition)
    }

    private func step(recorders: Int) async {
        await waitForRecorders(atLeast: recorders)
        clock.advance(by: Self.step)
        let (chunk, parked) = state.withLock { state -> ([Float], [CheckedContinuation<[Float], any Error>]) in
            let chunk = Self.mix(&state)
            let parked = Array(state.parked.values)
            state.parked = [:]
            return (chunk, parked)
        }
        for continuation in parked { continuation.resume(returning: chunk) }
    }

    /// Waits until at least `count` recorders are open and every open recorder waits in `read()`.
    private func waitForRecorders(atLeast count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.parked.count >= state.recorders.count, state.recorders.count >= count { return true }
                state.parkWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func mix(_ state: inout State) -> [Float] {
        var out = [Float](repeating: 0, count: chunk)
        for sound in state.sounds.values where !(sound.isPlayer && state.playersMuted) {
            for i in 0..<chunk {
                let offset = state.position + i - sound.start
                guard offset >= 0 else { continue }
                if sound.loops {
                    out[i] += sound.samples[offset % sound.samples.count]
                } else if offset < sound.samples.count {
                    out[i] += sound.samples[offset]
                }
            }
        }
        if state.noiseLevel > 0 {
            for i in 0..<chunk { out[i] += state.noiseLevel * SyntheticSound.gaussian(&state.random) }
        }
        state.position += chunk
        return out
    }

    static func error(_ problem: AudioDeviceStatus.Problem) -> NearbyError {
        NearbyError(.mediumUnavailable, "in-memory audio device: \(problem.rawValue)", cause: problem)
    }

    private struct Device: AudioMediumIO {
        let air: InMemoryAudioAir

        func playLoop(_ samples: [Float], onStarted: @escaping @Sendable () -> Void) async throws {
            let state = air.state
            let id = try state.withLock { state -> Int in
                if let problem = state.speakerProblem { throw InMemoryAudioAir.error(problem) }
                state.nextID += 1
                state.sounds[state.nextID] = Sound(samples: samples, start: state.position, loops: true, isPlayer: true)
                return state.nextID
            }
            onStarted()
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let stopped = state.withLock { state -> Bool in
                        guard state.sounds[id] != nil else { return true }
                        state.playerWaits[id] = continuation
                        return false
                    }
                    if stopped { continuation.resume() }
                }
            } onCancel: {
                state.withLock { state in
                    state.sounds[id] = nil
                    return state.playerWaits.removeValue(forKey: id)
                }?.resume()
            }
        }

        func openRecorder() async throws -> any AudioMediumRecording {
            let id = try air.state.withLock { state -> Int in
                if let problem = state.microphoneProblem { throw InMemoryAudioAir.error(problem) }
                state.nextID += 1
                state.recorders.insert(state.nextID)
                return state.nextID
            }
            return Recording(air: air, id: id)
        }
    }

    private struct Recording: AudioMediumRecording {
        let air: InMemoryAudioAir
        let id: Int

        func read() async throws -> [Float] {
            let state = air.state
            let id = self.id
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Float], any Error>) in
                    let (failure, waiters) = state.withLock { state -> ((any Error)?, [CheckedContinuation<Void, Never>]) in
                        if let problem = state.microphoneProblem { return (InMemoryAudioAir.error(problem), []) }
                        guard state.recorders.contains(id) else { return (CancellationError(), []) }
                        state.parked[id] = continuation
                        return (nil, state.allParked())
                    }
                    for waiter in waiters { waiter.resume() }
                    if let failure { continuation.resume(throwing: failure) }
                }
            } onCancel: {
                close()
            }
        }

        func close() {
            let (parked, waiters) = air.state.withLock { state in
                state.recorders.remove(id)
                return (state.parked.removeValue(forKey: id), state.allParked())
            }
            parked?.resume(throwing: CancellationError())
            for waiter in waiters { waiter.resume() }
        }
    }
}
