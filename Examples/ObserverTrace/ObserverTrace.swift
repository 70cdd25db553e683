// observer-trace: the six activities of a run loop's passes, printed by an observer, and a
// nested run inside a timer's callout that a stop ends.
//
//   swift run observer-trace
//
// The outer run goes: entry, then per pass beforeTimers, beforeSources, beforeWaiting (it
// sleeps), afterWaiting; a timer fires and runs the loop again inside its callout (a
// nested run, which an observer in the common modes sees too); a source signalled in the
// nested run stops it; the outer run ends at its deadline with exit.
import Glibc
import RingLoop

/// Writes a line at once (a pipe would buffer `print`).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

let loop = RingRunLoop.current
let nested = RingRunLoop.Mode("nested")
let depth = LoopBound(0, loop: loop)

let observer = LoopObserver(activities: .all) { _, activity in
    say(String(repeating: "  ", count: depth.value) + "\(activity)")
}
loop.add(observer, to: .default)
loop.add(observer, to: nested)

// A source that stops the innermost run when performed.
let stopper = LoopSource {
    say(String(repeating: "  ", count: depth.value) + "source: stop the nested run")
    RingRunLoop.current.stop()
}
loop.add(stopper, to: nested)

let timer = LoopTimer(after: .milliseconds(20)) { _ in
    say("timer: run the loop again, in mode \(nested)")
    depth.value += 1
    stopper.signal()
    let result = loop.run(mode: nested, for: .seconds(5))
    depth.value -= 1
    say("timer: the nested run returned \(result)")
}
loop.add(timer, to: .default)

let result = loop.run(mode: .default, for: .milliseconds(60))
say("outer run returned \(result)")
