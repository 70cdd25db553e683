import Testing

@testable import RingLoop

@Suite("A log budget: lines another process can cause at will")
struct LogBudgetTests {
    @Test("a burst a window goes out; the rest is held back and counted in the next line that goes out")
    func burstThenHeld() {
        var budget = LogBudget(burst: 3, window: .seconds(1))
        let start = MonotonicInstant(nanoseconds: 5_000_000_000)
        #expect((0..<3).map { _ in budget.admit(at: start) } == [0, 0, 0])
        #expect((0..<4).map { _ in budget.admit(at: start.advanced(by: .milliseconds(999))) } == [nil, nil, nil, nil])
        // A new window: the first line says four were held back; the count starts again.
        #expect(budget.admit(at: start.advanced(by: .seconds(1))) == 4)
        #expect(budget.admit(at: start.advanced(by: .seconds(1))) == 0)
        #expect(budget.admit(at: start.advanced(by: .seconds(1))) == 0)
        #expect(budget.admit(at: start.advanced(by: .milliseconds(1500))) == nil)
    }
}
