// Events compare field by field (`HIDEvent` and its payload are `Equatable`): a frame by its
// flags and its contacts in order, not by the buffer that holds them.

extension DigitizerFrame: Equatable {
    public static func == (lhs: DigitizerFrame, rhs: DigitizerFrame) -> Bool {
        guard lhs.count == rhs.count, lhs.fingerCount == rhs.fingerCount, lhs.isBoundingBox == rhs.isBoundingBox,
            lhs.buttonDown == rhs.buttonDown
        else { return false }
        return (0..<lhs.count).allSatisfy { lhs[$0] == rhs[$0] }
    }
}
