extension Unicode.Scalar {
    /// Whether the character controls how text is laid out rather than showing as one: a
    /// control character (a line break, an escape, NUL, DEL), a format character (a
    /// bidirectional override, which reorders what follows), a line or paragraph separator.
    /// A name another process chose (a client's, a device's) with one can forge a log line
    /// or drive a terminal; the event server's protocol refuses them, and the command
    /// shows them escaped.
    package var isLayoutControl: Bool {
        switch properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }
}
