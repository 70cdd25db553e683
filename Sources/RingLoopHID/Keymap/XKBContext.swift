import CXKBCommon

/// A libxkbcommon context whose messages are kept (for the error that reports them) while
/// it compiles, then dropped. Lives for one compilation; what it made keeps its own
/// reference to the context.
final class XKBContext {
    let context: OpaquePointer
    private let log: UnsafeMutablePointer<ringloop_xkb_log>

    /// A context that reads no `XKB_DEFAULT_*` variables (``KeyboardConfiguration``
    /// resolves them) and keeps messages of errors and worse.
    init() throws(KeymapError) {
        // The default include paths are added once the log is captured: a missing one is a
        // message for the error, not a line on standard error.
        let flags = xkb_context_flags(XKB_CONTEXT_NO_ENVIRONMENT_NAMES.rawValue | XKB_CONTEXT_NO_DEFAULT_INCLUDES.rawValue)
        guard let context = xkb_context_new(flags) else {
            throw .noContext(messages: "")
        }
        self.context = context
        log = .allocate(capacity: 1)
        ringloop_xkb_capture_log(context, log, XKB_LOG_LEVEL_ERROR)
        xkb_context_include_path_append_default(context)
    }

    deinit {
        // The context may outlive this (a keymap holds it): its messages go nowhere now.
        xkb_context_set_user_data(context, nil)
        xkb_context_set_log_level(context, XKB_LOG_LEVEL_CRITICAL)
        xkb_context_unref(context)
        log.deallocate()
    }

    /// The messages logged since the last call, one per line, and clears them.
    func takeMessages() -> String {
        let text = withUnsafeBytes(of: &log.pointee.text) { raw in
            String(decoding: raw.prefix(log.pointee.length), as: UTF8.self)
        }
        log.pointee.length = 0
        var lines = text.split(separator: "\n").map { String($0) }
        while lines.count > 12 { lines.removeLast() }
        return lines.joined(separator: "; ")
    }

    /// Where the context looks for keymap data (`/usr/share/X11/xkb` unless
    /// `XKB_CONFIG_ROOT` says otherwise).
    var includePaths: [String] {
        (0..<xkb_context_num_include_paths(context)).compactMap { index in
            xkb_context_include_path_get(context, index).map { String(cString: $0) }
        }
    }
}
