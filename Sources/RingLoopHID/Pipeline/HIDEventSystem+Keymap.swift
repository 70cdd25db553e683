import RingLoop

// The keymap an event system reads keys with.
extension HIDEventSystem {
    /// Reads every key event with `keymap` from now on (<doc:KeysAndText>): the keymap stage,
    /// right after key repeat, fills in ``KeyEvent/keysym``, ``KeyEvent/text`` and
    /// ``KeyEvent/keymapModifiers`` from one keyboard state for all the system's keyboards,
    /// consumes repeats of keys that do not repeat, and sets the keyboards' lock LEDs. The
    /// keymap stays across ``stop()`` and ``start()``. Client loop thread.
    ///
    /// - Parameters:
    ///   - keymap: The keymap, or `nil` to read keys without one again.
    ///   - composeTable: The Compose table for dead keys (``ComposeTable/forLocale(environment:)``),
    ///     or `nil` for none.
    ///   - controlsLEDs: Whether the stage writes the keyboards' Caps, Num and Scroll Lock
    ///     LEDs (when the state changes, and to each keyboard as it attaches). A program that
    ///     only watches keyboards another one owns (a monitor) passes `false`.
    public func setKeymap(_ keymap: Keymap?, composeTable: ComposeTable? = nil, controlsLEDs: Bool = true) {
        loop.preconditionOnLoopThread("HIDEventSystem.setKeymap")
        if let old = pipeline.keymap {
            pipeline.remove(old)
            pipeline.keymap = nil
        }
        if let keymap { pipeline.keymap = KeymapStage(keymap: keymap, composeTable: composeTable, controlsLEDs: controlsLEDs) }
        pipeline.stagesChanged()
    }

    /// The seat's keyboard state that key events are read with, or `nil` when there is no
    /// keymap (``setKeymap(_:composeTable:controlsLEDs:)``). Client loop thread.
    public var keyboardState: KeyboardState? {
        loop.preconditionOnLoopThread("HIDEventSystem.keyboardState")
        return pipeline.keymap?.keyboard
    }
}

extension HIDEventSystem {
    /// Types `text` into the chain as key events of `device`: the strokes that
    /// ``Keymap/keyStrokes(typing:composeTable:)`` gives in the system's keymap and Compose
    /// table (``setKeymap(_:composeTable:controlsLEDs:)``), each posted in order with ``post(_:)``
    /// (its usage and the modifier keys held, as the decoder would give them), stamped now.
    /// The keymap stage then reads them as it reads a keyboard's, so handlers get the text.
    ///
    /// Use an id no device uses (``post(_:)`` says why). Nothing is posted when a character
    /// cannot be typed. Client loop thread.
    ///
    /// - Parameters:
    ///   - text: The text.
    ///   - device: The id the key events are filed under.
    /// - Returns: The key events posted; fewer than the strokes when the queue filled up
    ///   (the rest are not posted, and the handlers hear of the loss as ``post(_:)`` says).
    /// - Throws: ``UntypableCharacter`` for a character the keymap cannot type;
    ///   ``HIDError/configuration(_:)`` when no keymap is set or the system is not started.
    @discardableResult
    public func post(text: String, device: HIDDeviceID) throws -> Int {
        loop.preconditionOnLoopThread("HIDEventSystem.post(text:device:)")
        guard let keyboard = pipeline.keymap?.keyboard else {
            throw HIDError.configuration("post(text:device:): no keymap; set one with setKeymap(_:composeTable:controlsLEDs:)")
        }
        let strokes = try keyboard.keymap.keyStrokes(typing: text, composeTable: keyboard.composeTable)
        var held: KeyModifiers = []
        var posted = 0
        for stroke in strokes {
            if let modifier = KeyModifiers.forLinuxKey(stroke.code) {
                if stroke.isDown { held.insert(modifier) } else { held.remove(modifier) }
            }
            let key = KeyEvent(
                usage: HIDUsage.forLinuxKey(stroke.code), code: stroke.code, state: stroke.isDown ? .down : .up, modifiers: held)
            guard try post(HIDEvent(device: device, timestamp: .now, payload: .key(key))) else { break }
            posted += 1
        }
        return posted
    }
}
