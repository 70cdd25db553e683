import Glibc
import Testing

/// Whether FUSE folders can be mounted here (root and /dev/fuse): suites that mount are
/// enabled only then, and say what is missing otherwise.
enum FUSEHere {
    static let usable: Bool = geteuid() == 0 && access("/dev/fuse", R_OK | W_OK) == 0
    static let missing: Comment = "needs /dev/fuse and root to mount FUSE folders (install fuse3, run as root)"
}
