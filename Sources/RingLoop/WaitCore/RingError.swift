import SystemPackage

/// A failed system call of the wait core: which operation, and the `errno` it gave.
///
/// liburing returns `-errno`; the wait core converts it once, here, and every throwing
/// function of the wait core throws this type.
public struct RingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The operation that failed, such as `"io_uring_queue_init_params"` or `"eventfd"`.
    public var operation: String
    /// The error number the kernel reported.
    public var errno: Errno

    /// Creates an error for `operation` from a positive error number.
    public init(operation: String, errno: Int32) {
        self.operation = operation
        self.errno = Errno(rawValue: errno)
    }

    /// Creates an error from liburing's convention of returning `-errno`.
    init(operation: String, negatedErrno result: Int32) {
        self.init(operation: operation, errno: -result)
    }

    public var description: String { "\(operation) failed: \(errno) (errno \(errno.rawValue))" }
}
