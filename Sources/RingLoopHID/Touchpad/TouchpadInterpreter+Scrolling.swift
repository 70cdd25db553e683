import RingLoop
import RingLoopEvdev

// The pointer's motion, two-finger and edge scrolling.
extension TouchpadInterpreter {
    // MARK: Pointer and scrolling

    mutating func updatePointer(fingers: Int, into out: inout [TouchpadAction]) {
        let dragging: Bool
        switch tap {
        case .dragging, .dragOrDoubleTap, .dragLockTouch: dragging = true
        default: dragging = false
        }
        // Edge scrolling: a single finger that began on a scrolling edge.
        if settings.scrollMethod == .edge, clickButton == nil, !dragging, let index = singleFinger(), touches[index].scrollEdge != nil {
            edgeScroll(index, into: &out)
            return
        }
        if settings.scrollMethod == .twoFinger, fingers == 2, clickButton == nil, !dragging {
            twoFingerScroll(into: &out)
            return
        }
        if scrollSource != nil { stopScroll(into: &out) }
        // The pointer follows one finger; with a clickpad's button held (or a drag), the
        // finger that moves most.
        guard fingers == 1 || clickButton != nil || dragging else { return }
        var best: Int?
        var bestLength = 0.0
        for index in touches.indices where touches[index].isLive && touches[index].role == .finger {
            let touch = touches[index]
            let length = (touch.deltaX * touch.deltaX + touch.deltaY * touch.deltaY).squareRoot()
            if length > bestLength {
                best = index
                bestLength = length
            }
        }
        guard let best else { return }
        emitMotion(dx: touches[best].deltaX, dy: touches[best].deltaY, into: &out)
    }

    func singleFinger() -> Int? {
        var found: Int?
        for index in touches.indices where touches[index].isLive && touches[index].role == .finger {
            if found != nil { return nil }
            found = index
        }
        return found
    }

    func emitMotion(dx: Double, dy: Double, into out: inout [TouchpadAction]) {
        guard dx != 0 || dy != 0 else { return }
        out.append(
            .motion(
                dx: dx * Self.normalizedPerMillimetre, dy: dy * Self.normalizedPerMillimetre, deviceDX: dx * unitsPerMillimetreX,
                deviceDY: dy * unitsPerMillimetreY))
    }

    mutating func edgeScroll(_ index: Int, into out: inout [TouchpadAction]) {
        var touch = touches[index]
        let along = touch.scrollEdge == .right ? touch.y - touch.startY : touch.x - touch.startX
        let across = touch.scrollEdge == .right ? touch.x - touch.startX : touch.y - touch.startY
        if !touch.edgeScrolling {
            // Leaving the edge sideways first makes it a pointer touch.
            if abs(across) > settings.scrollThreshold, abs(across) > abs(along) {
                touch.scrollEdge = nil
                touches[index] = touch
                emitMotion(dx: touch.deltaX, dy: touch.deltaY, into: &out)
                return
            }
            guard abs(along) > settings.scrollThreshold else { return }
            touch.edgeScrolling = true
            touches[index] = touch
            if scrollSource != nil && scrollSource != .edge { stopScroll(into: &out) }
            scrollSource = .edge
            scrollVertical = touch.scrollEdge == .right
            scrollHorizontal = touch.scrollEdge == .bottom
            // The movement that passed the threshold scrolls too.
            let amount = along * Self.scrollPerMillimetre
            out.append(
                .scroll(
                    horizontal: scrollHorizontal ? amount : 0, vertical: scrollVertical ? amount : 0, source: .edge, isStop: false))
            return
        }
        let amount = (touch.scrollEdge == .right ? touch.deltaY : touch.deltaX) * Self.scrollPerMillimetre
        guard amount != 0 else { return }
        if scrollSource != .edge {
            // Stopped meanwhile (another finger came and went): the same edge scrolls again.
            if scrollSource != nil { stopScroll(into: &out) }
            scrollSource = .edge
            scrollVertical = touch.scrollEdge == .right
            scrollHorizontal = touch.scrollEdge == .bottom
        }
        out.append(
            .scroll(horizontal: scrollHorizontal ? amount : 0, vertical: scrollVertical ? amount : 0, source: .edge, isStop: false))
    }

    mutating func twoFingerScroll(into out: inout [TouchpadAction]) {
        if scrollSource == .edge { stopScroll(into: &out) }
        // The mean of the fingers that moved in this frame.
        var sumX = 0.0
        var sumY = 0.0
        var moving = 0
        for touch in touches where touch.isLive && touch.role == .finger && (touch.deltaX != 0 || touch.deltaY != 0) {
            sumX += touch.deltaX
            sumY += touch.deltaY
            moving += 1
        }
        guard moving > 0 else { return }
        var dx = sumX / Double(moving)
        var dy = sumY / Double(moving)
        if scrollSource == nil {
            pendingScrollX = 0
            pendingScrollY = 0
        }
        scrollSource = .finger
        if !scrollHorizontal || !scrollVertical {
            pendingScrollX += dx
            pendingScrollY += dy
            // The first axis starts at the threshold; the other, once one scrolls, only past
            // the direction lock.
            let thresholdX = scrollVertical ? settings.scrollDirectionLockThreshold : settings.scrollThreshold
            let thresholdY = scrollHorizontal ? settings.scrollDirectionLockThreshold : settings.scrollThreshold
            if !scrollHorizontal, abs(pendingScrollX) > thresholdX {
                scrollHorizontal = true
                dx = pendingScrollX
            }
            if !scrollVertical, abs(pendingScrollY) > thresholdY {
                scrollVertical = true
                dy = pendingScrollY
            }
        }
        let horizontal = scrollHorizontal ? dx * Self.scrollPerMillimetre : 0
        let vertical = scrollVertical ? dy * Self.scrollPerMillimetre : 0
        guard horizontal != 0 || vertical != 0 else { return }
        out.append(.scroll(horizontal: horizontal, vertical: vertical, source: .finger, isStop: false))
    }

    mutating func stopScroll(into out: inout [TouchpadAction]) {
        if let source = scrollSource, scrollHorizontal || scrollVertical {
            out.append(.scroll(horizontal: 0, vertical: 0, source: source, isStop: true))
        }
        scrollSource = nil
        scrollHorizontal = false
        scrollVertical = false
        pendingScrollX = 0
        pendingScrollY = 0
    }
}
