import RingLoop

// The router drives each client's state (`ServedClient`): what a client's operation found
// out, the router acts on here; a client never calls back into the server.
extension HIDEventServer {
    /// Hands `event` to `client` (its frame, or its count while it lags); a client whose
    /// port is gone is detached.
    func deliver(_ event: HIDEvent, to client: ServedClient) {
        if client.take(event) == .gone { clientWentAway(client) }
    }

    /// Sends the frame `client` gathered.
    func flush(_ client: ServedClient) {
        if client.flush() == .gone { clientWentAway(client) }
    }

    /// A device's description, then its addition (both wait while the client lags).
    func announce(_ device: HIDDeviceInfo, _ added: HIDEvent, to client: ServedClient) {
        if !client.lagging, client.flush() == .gone { return clientWentAway(client) }
        if !client.lagging {
            switch client.sendDescription(device) {
            case .sent: break
            case .full: client.lagBehindDescription()
            case .gone: return clientWentAway(client)
            }
        }
        deliver(added, to: client)
    }

    /// `client` acknowledged every batch up to `sequence`: a client that was not
    /// responding is reported responding again, and one that lagged and has handled all
    /// it was sent catches up.
    func acknowledged(_ sequence: UInt64, by client: ServedClient) {
        guard case .taken(let respondsAgain) = client.acknowledge(sequence) else { return }
        if respondsAgain { notify(.responding(client.info)) }
        if client.mayCatchUp { client.catchUp(devices: liveDevices) }
    }
}
