/// The process's port thread (`ringloop-ports`): a loop that reads what ports of other
/// processes send back on this process's connections — hellos, refusals, replies — and
/// notices their end, so a request's reply and an invalidation callback need no thread of
/// the caller's to watch for them. Started on first use; lives as long as the process.
enum PortClientThread {
    private static let thread = LoopThread(name: "ringloop-ports")

    /// The thread's loop.
    static var loop: RingRunLoop { thread.loop }
}
