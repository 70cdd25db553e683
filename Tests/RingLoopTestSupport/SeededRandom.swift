import Glibc

/// A small deterministic generator (SplitMix64): randomized tests draw from it, so a
/// failure can be replayed from its seed.
public struct SeededGenerator: RandomNumberGenerator {
    public var state: UInt64

    public init(state: UInt64) { self.state = state }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A generator for the test `name`. By default seeded from the name (FNV-1a), so the
    /// sequence is the same every run and a failure repeats as it is, and the run prints
    /// nothing. `RINGLOOP_TEST_SEED` sets the seed (decimal or 0x-hexadecimal), or, as
    /// `random`, draws a fresh one from the system's generator, printed first (before the
    /// test can crash) with how to run the test again on it.
    public static func forTest(_ name: String) -> SeededGenerator {
        let given = getenv("RINGLOOP_TEST_SEED").map { String(cString: $0) }
        if given == "random" {
            let seed = UInt64.random(in: 0...UInt64.max)
            print("\(name): seed 0x\(String(seed, radix: 16)) (RINGLOOP_TEST_SEED=0x\(String(seed, radix: 16)) runs it again)")
            fflush(nil)  // every output stream, before the test can crash
            return SeededGenerator(state: seed)
        }
        if let seed = given.flatMap({ $0.hasPrefix("0x") ? UInt64($0.dropFirst(2), radix: 16) : UInt64($0) }) {
            return SeededGenerator(state: seed)
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return SeededGenerator(state: hash)
    }
}
