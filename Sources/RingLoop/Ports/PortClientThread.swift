/// The process's port thread (`ringloop-ports`): a loop that watches this process's
/// connections to ports of other processes for their end (`POLLRDHUP`, `POLLHUP`; no
/// readiness for data), reads what the port sent before the end (a refusal) and runs the
/// invalidation callbacks, so a remote port whose sender never waits still learns that its
/// port went away; it also closes the connections' descriptors once no thread reads them.
/// Hellos, refusals and replies that come while a sender waits are read by the sender's
/// own loop (ProcessPortConnection+Reading). It wakes only when a connection ends or is
/// closed: a request costs it nothing. Started on first use; lives as long as the process.
enum PortClientThread {
    private static let thread = LoopThread(name: "ringloop-ports")

    /// The thread's loop.
    static var loop: RingRunLoop { thread.loop }
}
