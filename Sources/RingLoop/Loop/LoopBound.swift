/// A value that lives on one loop's thread, in a box that `@Sendable` callbacks can
/// capture: every read and write checks that it happens on that thread.
///
/// The callbacks of loop items (``LoopSource``, ``LoopPortSource``, ``LoopObserver``,
/// ``LoopTimer``) are `@Sendable`, because an item can be made on one thread and added to
/// a loop that runs on another. A callback therefore cannot capture a `var`, or an object
/// that is not `Sendable`, directly. State that only the loop's callbacks use belongs in a
/// `LoopBound`: the compiler accepts the capture, and the box traps (as swift-nio's
/// `NIOLoopBound` does) if anything touches the value from another thread.
///
/// ```swift
/// let worker = LoopThread(name: "ticker")
/// let ticks = LoopBound(0, loop: worker.loop)        // from any thread: 0 is handed over
/// let timer = LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { timer in
///     ticks.value += 1                                  // on the worker's thread
///     if ticks.value == 3 { timer.invalidate() }
/// }
/// worker.loop.add(timer, to: .common)
/// ```
///
/// For state shared with other threads, use a `Mutex` or an `Atomic` (Synchronization)
/// instead.
public final class LoopBound<Value>: @unchecked Sendable {
    // @unchecked: `storage` is only reached through `value`, which checks it is on
    // `loop`'s thread; the value arrives either handed over (`sending`) or on that thread.

    /// The loop whose thread the value belongs to.
    public let loop: RingRunLoop
    private var storage: Value

    /// Boxes a value handed over from any thread: `sending` proves that nothing else keeps
    /// a reference to it.
    public init(_ value: sending Value, loop: RingRunLoop) {
        self.loop = loop
        self.storage = value
    }

    /// Boxes a value that already belongs to `loop`'s thread (for example `self` of an
    /// object that only the loop uses). Call it on that thread.
    public init(onLoopThread value: Value, loop: RingRunLoop) {
        loop.preconditionOnLoopThread("LoopBound(onLoopThread:loop:)")
        self.loop = loop
        self.storage = value
    }

    /// The value. Read and write it on the loop's thread only; anywhere else (another
    /// thread, or after the loop's thread ended) traps with a message that says how to
    /// reach it.
    public var value: Value {
        get {
            loop.preconditionOnLoopThread(explaining: Self.misuse)
            return storage
        }
        _modify {
            loop.preconditionOnLoopThread(explaining: Self.misuse)
            yield &storage
        }
    }

    /// What the trap says: the rule and the ways to follow it.
    static var misuse: String {
        "LoopBound.value was used off its loop's thread (or after that thread ended), where it would race the loop's"
            + " callbacks. Use it only in that loop's callbacks; from another thread, hop there first"
            + " (loop.perform { ... }, loop.perform(inModes: [.common], waitUntilDone: true) { ... },"
            + " or Task(executorPreference: loop) { ... }) and copy out what you need while the thread runs;"
            + " for state that threads share, use a Mutex or an Atomic (Synchronization) instead of a LoopBound"
    }
}

/// An unowned reference to an object that lives on one loop's thread, for the `@Sendable`
/// callbacks of the object's own loop items (which must not keep it alive).
package struct UnownedLoopReference<Object: AnyObject>: @unchecked Sendable {
    // @unchecked: `object` is only reached through `value`, which checks the thread, and
    // the reference is made on that thread.
    private unowned let object: Object
    private let loop: RingRunLoop

    /// Refers to `object`, which belongs to `loop`'s thread; call on that thread.
    package init(_ object: Object, loop: RingRunLoop) {
        loop.preconditionOnLoopThread("UnownedLoopReference.init")
        self.object = object
        self.loop = loop
    }

    /// The object; traps off the loop's thread (or, like any unowned reference, once the
    /// object is gone).
    package var value: Object {
        loop.preconditionOnLoopThread("UnownedLoopReference.value")
        return object
    }
}
