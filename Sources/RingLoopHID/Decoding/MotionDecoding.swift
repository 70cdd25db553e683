import RingLoop
import RingLoopEvdev

/// A motion node's conversion and clocks: the axes' resolutions taken once, the
/// sensor's 32-bit microsecond clock made continuous, and the sample rate estimated as
/// samples arrive. A value type of fixed size: decoding a sample allocates nothing.
struct MotionDecoding {
    /// The axes a motion node reports: acceleration, then angular velocity.
    static let axes: Set<UInt16> = [
        Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_Z, Evdev.ABS_RX, Evdev.ABS_RY, Evdev.ABS_RZ,
    ]
    /// A jump of the sensor's clock beyond this between two samples is its reset, not time.
    static let resetJump: UInt32 = 10_000_000
    /// Weight of a new interval in the rate estimate (about the last 16 samples count).
    static let rateWeight = 1.0 / 16

    /// Per axis (`ABS_X`…`ABS_Z`, `ABS_RX`…`ABS_RZ`): what multiplies a value into g or °/s.
    let scales: InlineArray<6, Double>
    let sensors: MotionEvent.Sensors
    let isCalibrated: Bool

    /// `MSC_TIMESTAMP` of the frame being read.
    var pendingTimestamp: UInt32?
    private var lastRaw: UInt32 = 0
    private var sensorTime: UInt64 = 0
    private var hasSensorTime = false
    /// The kernel's stamp and the sensor's time of the previous sample (0: none yet).
    private var lastKernelTime: UInt64 = 0
    private var lastSensorTime: UInt64 = 0
    /// Mean interval between samples, microseconds (0: not known yet).
    private var meanInterval = 0.0

    init(info: HIDDeviceInfo) {
        var scales = InlineArray<6, Double>(repeating: 1)
        var calibrated = true
        let codes = [Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_Z, Evdev.ABS_RX, Evdev.ABS_RY, Evdev.ABS_RZ]
        var sensors: MotionEvent.Sensors = []
        for (index, code) in codes.enumerated() {
            guard let axis = info.axes[code] else { continue }
            sensors.insert(index < 3 ? .accelerometer : .gyroscope)
            if axis.resolution > 0 {
                scales[index] = 1 / Double(axis.resolution)
            } else {
                calibrated = false
            }
        }
        self.scales = scales
        self.sensors = sensors
        self.isCalibrated = calibrated
    }

    /// The sample the frame ends with: the axes' current values converted, the clocks
    /// advanced.
    mutating func sample(_ axes: AxisValues, at time: MonotonicInstant) -> MotionEvent {
        let kernelTime = time.nanoseconds
        var interval = 0.0
        if let raw = pendingTimestamp {
            if hasSensorTime {
                let step = raw &- lastRaw
                if step <= Self.resetJump {
                    sensorTime &+= UInt64(step)
                } else {
                    // The sensor restarted its count: the kernel's clock says how long it was.
                    sensorTime &+= (kernelTime &- lastKernelTime) / 1000
                }
                interval = Double(sensorTime &- lastSensorTime)
            } else {
                sensorTime = UInt64(raw)
                hasSensorTime = true
            }
            lastRaw = raw
        } else if lastKernelTime != 0 {
            interval = Double(kernelTime &- lastKernelTime) / 1000
        }
        if interval > 0 {
            meanInterval = meanInterval == 0 ? interval : meanInterval + (interval - meanInterval) * Self.rateWeight
        }
        lastKernelTime = kernelTime
        lastSensorTime = sensorTime
        func value(_ code: UInt16, _ index: Int) -> Double { Double(axes[code]) * scales[index] }
        return MotionEvent(
            acceleration: MotionVector(x: value(Evdev.ABS_X, 0), y: value(Evdev.ABS_Y, 1), z: value(Evdev.ABS_Z, 2)),
            rotationRate: MotionVector(x: value(Evdev.ABS_RX, 3), y: value(Evdev.ABS_RY, 4), z: value(Evdev.ABS_RZ, 5)),
            sensorTime: hasSensorTime ? sensorTime : nil, sampleRate: meanInterval > 0 ? 1e6 / meanInterval : 0,
            sensors: sensors, isCalibrated: isCalibrated)
    }
}
