extension RingRunLoop {
    /// A loop item of any kind, as the loop's tables hold it.
    enum Item: Sendable {
        case source(LoopSource)
        case portSource(LoopPortSource)
        case observer(LoopObserver)
        case timer(LoopTimer)

        var identity: ObjectIdentifier {
            switch self {
            case .source(let item): ObjectIdentifier(item)
            case .portSource(let item): ObjectIdentifier(item)
            case .observer(let item): ObjectIdentifier(item)
            case .timer(let item): ObjectIdentifier(item)
            }
        }

        var membership: LoopItem {
            switch self {
            case .source(let item): item.membership
            case .portSource(let item): item.membership
            case .observer(let item): item.membership
            case .timer(let item): item.membership
            }
        }

        var isValid: Bool {
            switch self {
            case .source(let item): item.isValid
            case .portSource(let item): item.isValid
            case .observer(let item): item.isValid
            case .timer(let item): item.isValid
            }
        }
    }
}
