import Foundation

/// Kernel HID drivers fed through `/dev/uhid` (filled in below).
enum UHIDChecks {
    static func run(_ context: CheckContext) {}
}
