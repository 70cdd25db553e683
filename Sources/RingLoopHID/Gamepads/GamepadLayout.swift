import RingLoopEvdev

/// Dead zones of a standard gamepad's sticks and triggers, as fractions of their travel.
///
/// `nil` takes the device's own: the absolute axis's `flat` (the kernel's dead zone,
/// which evdev reports and does not apply) over half the stick's range, or over the
/// trigger's range. Sticks are radial: a stick inside its circle reads 0 on both axes, and
/// outside it the distance from the circle is scaled back to 0…1, so the direction is kept
/// and the edge still reads 1.
public struct GamepadDeadZones: Sendable, Hashable {
    /// The sticks' radial dead zone (0…1 of the stick's reach), or `nil` for the device's `flat`.
    public var stick: Double?
    /// The triggers' dead zone (0…1 of their travel), or `nil` for the device's `flat`.
    public var trigger: Double?

    /// Dead zones of `stick` and `trigger` (each `nil` for the device's `flat`).
    public init(stick: Double? = nil, trigger: Double? = nil) {
        self.stick = stick
        self.trigger = trigger
    }

    /// The device's own (`flat`), the default.
    public static let fromDevice = GamepadDeadZones()
    /// None: every value as SDL reports it.
    public static let none = GamepadDeadZones(stick: 0, trigger: 0)
}

/// The standard gamepad of one device: its raw buttons, axes and hats turned into SDL's
/// named controls (``GamepadEvent``) through an SDL mapping, as SDL 2's game controller
/// layer turns them, with dead zones.
///
/// Made once per device (``init(device:mapping:deadZones:)``: tables indexed by key and
/// axis code); then each raw input is ``process(button:isDown:emit:)`` or
/// ``process(axis:value:emit:)``, which emits the controls it changed and allocates
/// nothing. Values follow SDL's arithmetic step by step: an axis is first scaled to SDL's
/// −32768…32767 (SDL's float formula over the axis's range), a hat's axes become hat
/// directions with SDL's thresholds, then the mapping's first matching binding drives its
/// control (half axes, inversion, axis ↔ button thresholds at the middle of the input's
/// range); a stick reads that value over 32767 (−1…1), a trigger 0…1; the dead zone
/// applies last. Each event carries the raw value it came from.
public struct GamepadLayout: Sendable {
    /// The mapping in use.
    public let mapping: SDLGameControllerMapping
    /// The dead zones in use (fractions, resolved from the device's `flat` where asked).
    public let stickDeadZone: (left: Double, right: Double)
    /// The triggers' dead zones in use.
    public let triggerDeadZone: (left: Double, right: Double)

    private struct Binding: Sendable {
        enum InputKind: UInt8 { case button, axis, hat }
        var control: GamepadControl
        var outputIsAxis: Bool
        var outputMinimum: Int32
        var outputMaximum: Int32
        var inputKind: InputKind
        var inputIndex: Int
        var inputMinimum: Int32
        var inputMaximum: Int32
        var hatMask: UInt8
    }

    private struct AxisScale: Sendable {
        var minimum: Int32
        var maximum: Int32
        var scale: Float
    }

    private struct HatAxisState: Sendable {
        var minimum: Int32
        var maximum: Int32
        /// 0 negative, 1 centred, 2 positive (SDL's encoding).
        var position: Int
    }

    private let bindings: [Binding]
    /// SDL button number by key code (−1: none).
    private let buttonByCode: [Int16]
    /// SDL axis number by absolute code (−1: none; hats are in hatByCode).
    private let axisByCode: [Int16]
    /// SDL hat number by absolute code of a digital hat's axis (−1: none).
    private let hatByCode: [Int16]
    private let axisScales: [AxisScale]
    /// The binding each SDL button drives (SDL takes the first), −1 for none.
    private let bindingByButton: [Int16]
    /// Bindings reading each axis / hat, as ranges into `bindingOrder`.
    private let axisBindings: [Range<Int>]
    private let hatBindings: [Range<Int>]
    private let bindingOrder: [Int]

    // State (what SDL keeps per joystick and per controller).
    private var buttonDown: [Bool]
    private var axisValue: [Int32]
    private var axisMatch: [Int16]
    private var hatAxes: [HatAxisState]
    private var hatMask: [UInt8]
    /// Per control: SDL's value, the value last emitted, the raw value behind it.
    private var controlValue: [Int32]
    private var emitted: [Double]
    private var controlRaw: [Int32]

    /// The layout of `device` through `mapping`, with `deadZones`.
    public init(device: HIDDeviceInfo, mapping: SDLGameControllerMapping, deadZones: GamepadDeadZones = .fromDevice) {
        self.mapping = mapping
        let layout = device.sdlLayout
        var buttonByCode = [Int16](repeating: -1, count: Int(Evdev.KEY_MAX) + 1)
        for (index, code) in layout.buttons.enumerated() { buttonByCode[Int(code)] = Int16(index) }
        var axisByCode = [Int16](repeating: -1, count: Int(Evdev.ABS_MAX) + 1)
        var scales: [AxisScale] = []
        for (index, code) in layout.axes.enumerated() {
            axisByCode[Int(code)] = Int16(index)
            let axis = device.axes[code] ?? AbsoluteAxis(minimum: 0, maximum: 0)
            let range = Float(axis.maximum &- axis.minimum)
            scales.append(AxisScale(minimum: axis.minimum, maximum: axis.maximum, scale: Float(65535) / range))
        }
        var hatByCode = [Int16](repeating: -1, count: Int(Evdev.ABS_MAX) + 1)
        var hatAxes: [HatAxisState] = []
        for (index, pair) in layout.hats.enumerated() {
            for side in 0..<2 {
                let code = Evdev.ABS_HAT0X + UInt16(pair * 2 + side)
                hatByCode[Int(code)] = Int16(index)
                let axis = device.has(type: Evdev.EV_ABS, code: code) ? device.axes[code] : nil
                hatAxes.append(HatAxisState(minimum: axis?.minimum ?? -1, maximum: axis?.maximum ?? 1, position: 1))
            }
        }
        var compiled: [Binding] = []
        for binding in mapping.bindings {
            var item = Binding(
                control: .a, outputIsAxis: false, outputMinimum: 0, outputMaximum: 0, inputKind: .button, inputIndex: 0,
                inputMinimum: 0, inputMaximum: 0, hatMask: 0)
            switch binding.output {
            case .button(let control): item.control = control
            case .axis(let control, let minimum, let maximum):
                item.control = control
                item.outputIsAxis = true
                item.outputMinimum = minimum
                item.outputMaximum = maximum
            }
            switch binding.input {
            case .button(let index):
                item.inputKind = .button
                item.inputIndex = index
            case .axis(let index, let minimum, let maximum):
                item.inputKind = .axis
                item.inputIndex = index
                item.inputMinimum = minimum
                item.inputMaximum = maximum
            case .hat(let index, let mask):
                item.inputKind = .hat
                item.inputIndex = index
                item.hatMask = mask
            }
            compiled.append(item)
        }
        var bindingByButton = [Int16](repeating: -1, count: layout.buttons.count)
        for (index, binding) in compiled.enumerated().reversed()
        where binding.inputKind == .button && binding.inputIndex < bindingByButton.count {
            bindingByButton[binding.inputIndex] = Int16(index)
        }
        var order: [Int] = []
        var axisRanges: [Range<Int>] = []
        for axis in 0..<layout.axes.count {
            let start = order.count
            order += compiled.indices.filter { compiled[$0].inputKind == .axis && compiled[$0].inputIndex == axis }
            axisRanges.append(start..<order.count)
        }
        var hatRanges: [Range<Int>] = []
        for hat in 0..<layout.hats.count {
            let start = order.count
            order += compiled.indices.filter { compiled[$0].inputKind == .hat && compiled[$0].inputIndex == hat }
            hatRanges.append(start..<order.count)
        }
        bindings = compiled
        self.buttonByCode = buttonByCode
        self.axisByCode = axisByCode
        self.hatByCode = hatByCode
        axisScales = scales
        self.bindingByButton = bindingByButton
        axisBindings = axisRanges
        hatBindings = hatRanges
        bindingOrder = order
        buttonDown = [Bool](repeating: false, count: layout.buttons.count)
        axisValue = scales.map { Self.sdlAxisValue(0, $0) }
        for index in scales.indices {
            if let code = layout.axes.indices.contains(index) ? layout.axes[index] : nil, let axis = device.axes[code] {
                axisValue[index] = Self.sdlAxisValue(axis.value, scales[index])
            }
        }
        axisMatch = [Int16](repeating: -1, count: scales.count)
        self.hatAxes = hatAxes
        hatMask = [UInt8](repeating: 0, count: layout.hats.count)
        let controls = GamepadControl.allCases.count
        controlValue = [Int32](repeating: 0, count: controls)
        emitted = [Double](repeating: 0, count: controls)
        controlRaw = [Int32](repeating: 0, count: controls)

        // Dead zones: the flat of the axis each stick or trigger reads.
        func flatFraction(_ control: GamepadControl, trigger: Bool) -> Double {
            for binding in mapping.bindings {
                guard case .axis(let bound, _, _) = binding.output, bound == control,
                    case .axis(let index, _, _) = binding.input, layout.axes.indices.contains(index),
                    let axis = device.axes[layout.axes[index]], axis.maximum > axis.minimum
                else { continue }
                let span = Double(axis.maximum) - Double(axis.minimum)
                return min(1, Double(axis.flat) / (trigger ? span : span / 2))
            }
            return 0
        }
        func clampFraction(_ value: Double) -> Double { min(max(value, 0), 0.99) }
        stickDeadZone = (
            clampFraction(deadZones.stick ?? max(flatFraction(.leftx, trigger: false), flatFraction(.lefty, trigger: false))),
            clampFraction(deadZones.stick ?? max(flatFraction(.rightx, trigger: false), flatFraction(.righty, trigger: false)))
        )
        triggerDeadZone = (
            clampFraction(deadZones.trigger ?? flatFraction(.lefttrigger, trigger: true)),
            clampFraction(deadZones.trigger ?? flatFraction(.righttrigger, trigger: true))
        )
    }

    /// The current value of a control (after the dead zone), as last emitted.
    public func value(of control: GamepadControl) -> Double { emitted[Int(control.rawValue)] }

    /// A key of the device went down or up (`BTN_SOUTH`…, any key code SDL numbers);
    /// emits the controls it changed. Codes SDL does not number are ignored.
    public mutating func process(button code: UInt16, isDown: Bool, emit: (GamepadEvent) -> Void) {
        guard Int(code) < buttonByCode.count else { return }
        let index = Int(buttonByCode[Int(code)])
        guard index >= 0, buttonDown[index] != isDown else { return }
        buttonDown[index] = isDown
        let bindingIndex = Int(bindingByButton[index])
        guard bindingIndex >= 0 else { return }
        let binding = bindings[bindingIndex]
        let raw: Int32 = isDown ? 1 : 0
        if binding.outputIsAxis {
            setControl(binding.control, isDown ? binding.outputMaximum : binding.outputMinimum, raw: raw, emit: emit)
        } else {
            setControl(binding.control, raw, raw: raw, emit: emit)
        }
    }

    /// An absolute axis of the device changed (a stick, a trigger, a hat's axis); emits the
    /// controls it changed. Codes SDL does not number are ignored.
    public mutating func process(axis code: UInt16, value: Int32, emit: (GamepadEvent) -> Void) {
        guard Int(code) < axisByCode.count else { return }
        let hat = Int(hatByCode[Int(code)])
        if hat >= 0 {
            processHat(hat, side: Int(code - Evdev.ABS_HAT0X) % 2, value: value, emit: emit)
            return
        }
        let index = Int(axisByCode[Int(code)])
        guard index >= 0 else { return }
        let scaled = Self.sdlAxisValue(value, axisScales[index])
        guard scaled != axisValue[index] else { return }
        axisValue[index] = scaled
        var match = -1
        for position in axisBindings[index] {
            let candidate = bindings[bindingOrder[position]]
            let low = min(candidate.inputMinimum, candidate.inputMaximum)
            let high = max(candidate.inputMinimum, candidate.inputMaximum)
            if scaled >= low && scaled <= high {
                match = bindingOrder[position]
                break
            }
        }
        let last = Int(axisMatch[index])
        if last >= 0 && (match < 0 || !sameOutput(bindings[last], bindings[match])) {
            resetOutput(bindings[last], raw: value, emit: emit)
        }
        axisMatch[index] = Int16(match)
        guard match >= 0 else { return }
        let binding = bindings[match]
        if binding.outputIsAxis {
            var result = scaled
            if binding.inputMinimum != binding.outputMinimum || binding.inputMaximum != binding.outputMaximum {
                let normalized =
                    Float(scaled - binding.inputMinimum) / Float(binding.inputMaximum - binding.inputMinimum)
                result = binding.outputMinimum + Int32(normalized * Float(binding.outputMaximum - binding.outputMinimum))
            }
            setControl(binding.control, result, raw: value, emit: emit)
        } else {
            let threshold = binding.inputMinimum + (binding.inputMaximum - binding.inputMinimum) / 2
            let pressed =
                binding.inputMaximum < binding.inputMinimum ? scaled <= threshold : scaled >= threshold
            setControl(binding.control, pressed ? 1 : 0, raw: value, emit: emit)
        }
    }

    /// Everything back to rest (buttons up, sticks centred, triggers released), emitting
    /// what changes: for a device that goes away or an app that loses the focus.
    public mutating func reset(emit: (GamepadEvent) -> Void) {
        for index in buttonDown.indices { buttonDown[index] = false }
        for index in axisMatch.indices { axisMatch[index] = -1 }
        for index in hatMask.indices { hatMask[index] = 0 }
        for index in hatAxes.indices { hatAxes[index].position = 1 }
        for control in GamepadControl.allCases where controlValue[Int(control.rawValue)] != 0 {
            setControl(control, 0, raw: 0, emit: emit)
        }
    }

    // MARK: SDL's steps

    /// SDL's scaling of an axis value to −32768…32767 (`AxisCorrect` without its optional
    /// dead zones): `floorf((value − min) × (65535 / (max − min)) − 32768 + 0.5)` in
    /// single precision, clamped.
    static func sdlAxisValue(_ value: Int32, minimum: Int32, maximum: Int32) -> Int32 {
        sdlAxisValue(value, AxisScale(minimum: minimum, maximum: maximum, scale: Float(65535) / Float(maximum &- minimum)))
    }

    private static func sdlAxisValue(_ value: Int32, _ axis: AxisScale) -> Int32 {
        var result = value
        if axis.minimum != axis.maximum {
            let scaled = (Float(value &- axis.minimum) * axis.scale + Float(-32768) + Float(0.5)).rounded(.down)
            result = scaled >= 32767 ? 32767 : scaled <= -32768 ? -32768 : Int32(scaled)
        }
        return min(max(result, -32768), 32767)
    }

    /// SDL's `HandleHat` (a hat axis to a direction, with its thresholds at a third of the
    /// range seen so far) then `HandleJoystickHat` (bindings of the directions that changed).
    private mutating func processHat(_ hat: Int, side: Int, value: Int32, emit: (GamepadEvent) -> Void) {
        let slot = hat * 2 + side
        var state = hatAxes[slot]
        var position = 1
        if value < 0 {
            if value <= state.minimum {
                state.minimum = value
                position = 0
            } else {
                position = value < state.minimum / 3 ? 0 : 1
            }
        } else if value > 0 {
            if value >= state.maximum {
                state.maximum = value
                position = 2
            } else {
                position = value > state.maximum / 3 ? 2 : 1
            }
        }
        state.position = position
        hatAxes[slot] = state
        let x = hatAxes[hat * 2].position
        let y = hatAxes[hat * 2 + 1].position
        let mask: UInt8 = (y == 0 ? 1 : y == 2 ? 4 : 0) | (x == 0 ? 8 : x == 2 ? 2 : 0)
        let changed = hatMask[hat] ^ mask
        guard changed != 0 else { return }
        hatMask[hat] = mask
        for position in hatBindings[hat] {
            let binding = bindings[bindingOrder[position]]
            guard changed & binding.hatMask != 0 else { continue }
            if mask & binding.hatMask != 0 {
                setControl(binding.control, binding.outputIsAxis ? binding.outputMaximum : 1, raw: value, emit: emit)
            } else {
                resetOutput(binding, raw: value, emit: emit)
            }
        }
    }

    private func sameOutput(_ a: Binding, _ b: Binding) -> Bool {
        a.outputIsAxis == b.outputIsAxis && a.control == b.control
    }

    private mutating func resetOutput(_ binding: Binding, raw: Int32, emit: (GamepadEvent) -> Void) {
        setControl(binding.control, 0, raw: raw, emit: emit)
    }

    /// A control's SDL value changed: its value after the dead zone, emitted if it changed
    /// (for a stick, the other axis too when the radial dead zone moves it).
    private mutating func setControl(_ control: GamepadControl, _ sdlValue: Int32, raw: Int32, emit: (GamepadEvent) -> Void) {
        let slot = Int(control.rawValue)
        controlValue[slot] = sdlValue
        controlRaw[slot] = raw
        if !control.isAxis {
            let value: Double = sdlValue != 0 ? 1 : 0
            if value != emitted[slot] {
                emitted[slot] = value
                emit(GamepadEvent(control: control, value: value, raw: raw))
            }
            return
        }
        if control.isTrigger {
            let zone = control == .lefttrigger ? triggerDeadZone.left : triggerDeadZone.right
            var value = max(0, min(1, Double(sdlValue) / 32767))
            value = value <= zone ? 0 : (value - zone) / (1 - zone)
            if value != emitted[slot] {
                emitted[slot] = value
                emit(GamepadEvent(control: control, value: value, raw: raw))
            }
            return
        }
        guard let partner = control.stickPartner else { return }
        let isLeft = control == .leftx || control == .lefty
        let zone = isLeft ? stickDeadZone.left : stickDeadZone.right
        let own = max(-1, min(1, Double(sdlValue) / 32767))
        let other = max(-1, min(1, Double(controlValue[Int(partner.rawValue)]) / 32767))
        var ownValue = own
        var otherValue = other
        if zone > 0 {
            let magnitude = (own * own + other * other).squareRoot()
            if magnitude <= zone {
                ownValue = 0
                otherValue = 0
            } else {
                let scale = (min(magnitude, 1) - zone) / (1 - zone) / magnitude
                ownValue = own * scale
                otherValue = other * scale
            }
        }
        if ownValue != emitted[slot] {
            emitted[slot] = ownValue
            emit(GamepadEvent(control: control, value: ownValue, raw: raw))
        }
        // The other axis moves with the radial scale; it is reported when that moves it by
        // SDL's resolution (1/32767) or across 0, not for every rounding of the scale.
        let partnerSlot = Int(partner.rawValue)
        let partnerMoved =
            abs(otherValue - emitted[partnerSlot]) >= 1.0 / 32767 || (otherValue == 0) != (emitted[partnerSlot] == 0)
        if zone > 0 && partnerMoved {
            emitted[partnerSlot] = otherValue
            emit(GamepadEvent(control: partner, value: otherValue, raw: controlRaw[partnerSlot]))
        }
    }
}
