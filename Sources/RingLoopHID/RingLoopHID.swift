/// RingLoopHID: evdev devices → HID events → a bounded event queue → handler callbacks,
/// delivered source1 → queue → source0 on a RingLoop loop, as IOHIDEvents reach an app.
///
/// The input chain is built in the input issue; this module exists so the package's
/// layout and dependency arrows (RingLoopHID uses RingLoop and libevdev) hold from the start.
import CLibEvdev
import RingLoop

/// The libevdev version this module was linked against, as a check that the system
/// library resolves.
public enum RingLoopHIDLinkage {
    /// `true` when libevdev's symbols resolve (always, once linked).
    public static var libevdevLinked: Bool {
        let device = libevdev_new()
        defer { libevdev_free(device) }
        return device != nil
    }
}
