import RingLoop

// The keymap held by the server for all its clients.
extension HIDEventServer {
    /// Holds the keymap in one place for every client, as a Wayland compositor does: the
    /// server's own system reads key events with it (``HIDEventSystem/setKeymap(_:composeTable:controlsLEDs:)``)
    /// before routing them, so each client receives ``KeyEvent/keysym``, ``KeyEvent/text``
    /// and ``KeyEvent/keymapModifiers`` with every key event, and the keyboards' LEDs follow
    /// the one state. The focus moving to another client (or to none) ends a compose
    /// sequence and clears latched modifiers, so a dead key pressed for one client does not
    /// change the next client's first key. A client may still set a keymap of its own on
    /// its system; it then reads the keys again with that one. Server loop thread.
    ///
    /// - Parameters:
    ///   - keymap: The keymap, or `nil` to route keys without one.
    ///   - composeTable: The Compose table for dead keys, or `nil` for none.
    public func setKeymap(_ keymap: Keymap?, composeTable: ComposeTable? = nil) {
        loop.preconditionOnLoopThread("HIDEventServer.setKeymap")
        system.setKeymap(keymap, composeTable: composeTable)
        guard keymap != nil, !system.pipeline.keymapFollowsServerFocus else { return }
        system.pipeline.keymapFollowsServerFocus = true
        addClientObserver { [unowned self] event in
            if case .focusChanged = event { self.system.keyboardState?.cancelComposeAndLatches() }
        }
    }
}
