/// RingLoopDevices: recordings in the evemu format, virtual evdev devices (uinput and
/// FUSE backends) and replay.
///
/// Built in the virtual-devices issue; this module exists so the package's layout and
/// dependency arrows (libevdev and fuse3) hold from the start.
import CFuse

// The device description (`InputDeviceDescription`) and the evdev names belong to
// RingLoopEvdev; a user of recordings and virtual devices gets them with this module.
@_exported import RingLoopEvdev

/// Versions of the system libraries this module links.
package enum RingLoopDevicesLinkage {
    /// libfuse3's version number (for example 314 for 3.14).
    package static var fuseVersion: Int32 { fuse_version() }
}
