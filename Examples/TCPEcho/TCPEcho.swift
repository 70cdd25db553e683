// tcp-echo: a headless device talking to the network, on one RingLoop thread.
//
//   swift run tcp-echo serve --port 7007        # an echo server; Ctrl-C or SIGTERM stops it
//   swift run tcp-echo send --port 7007 hello   # sends each message, prints each echo
//
// The server is written with callbacks (a channel's source in the loop's modes, as a
// CFSocket's); the client with async/await on the same kind of loop.
import ArgumentParser
import Glibc
import RingLoop

@main
struct TCPEcho: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tcp-echo", abstract: "A TCP echo server and client on a RingLoop run loop.",
        subcommands: [Serve.self, Send.self])
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Echo every connection on 127.0.0.1 until SIGINT or SIGTERM.")

    @Option(help: "The port to listen on (0: any free port, printed at start).")
    var port: UInt16 = 7007

    func run() throws {
        let loop = RingRunLoop.current
        // Blocked here, before any other thread starts, so they reach the loop's signalfd.
        let signals = try loop.signals([SIGINT, SIGTERM])
        let listener = try SocketAddress.loopback(port: port).makeListeningSocket()
        let totals = LoopBound((connections: 0, bytes: 0), loop: loop)
        let server = LoopIOChannel(fileDescriptor: listener, loop: loop) { server, completion in
            switch completion.outcome {
            case .accepted(let socket):
                totals.value.connections += 1
                let connection = LoopIOChannel(fileDescriptor: socket, loop: server.loop) { connection, completion in
                    switch completion.outcome {
                    case .endOfFile: connection.closeAfterWrites()  // what is owed still goes out
                    case .failed: connection.close()
                    default: break
                    }
                }
                // A peer that sends and does not read is held back by TCP: above the write
                // queue's high water mark the connection stops taking bytes in.
                connection.pausesReceivingWhileUnwritable = true
                server.loop.add(connection.source, to: .common)
                do {
                    // Each received buffer is sent back from where it arrived, behind the
                    // bytes sent before it: no copy, nothing reordered.
                    try connection.receive { connection, bytes in
                        totals.value.bytes += bytes.count
                        do { try connection.send(bytes) } catch { connection.close() }
                    }
                } catch {
                    connection.close()
                }
            case .failed(let failure) where !completion.isFinal:
                // Out of descriptors (or memory): the accept tries again in a second, the
                // connections wait in the listen queue meanwhile.
                say("tcp-echo: cannot accept for now (\(failure)); trying again in 1 s")
            case .failed(let failure) where failure != .cancelled:
                say("tcp-echo: stopped accepting: \(failure)")
                server.loop.stop()
            default:
                break
            }
        }
        loop.add(server.source, to: .common)
        try server.accept()
        say("listening on \(try SocketAddress.local(of: listener))")
        Task(executorPreference: loop) {
            for await signal in signals {
                say("tcp-echo: signal \(signal), stopping")
                server.close()
                loop.stop()
                break
            }
        }
        loop.run()
        say("served \(totals.value.connections) connections, \(totals.value.bytes) bytes")
    }
}

struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send each message to an echo server; print each echo.")

    @Option(help: "The server's port on 127.0.0.1.")
    var port: UInt16 = 7007

    @Argument(help: "The messages to send, one after another.")
    var messages: [String]

    func validate() throws {
        guard !messages.isEmpty else { throw ValidationError("give at least one message to send") }
    }

    func run() throws {
        let loop = RingRunLoop.current
        let address = SocketAddress.loopback(port: port)
        let client = LoopIOChannel(fileDescriptor: try address.makeSocket(), loop: loop)
        loop.add(client.source, to: .common)
        let outcome = LoopBound<Result<Void, IOFailure>?>(nil, loop: loop)
        let messages = self.messages
        Task(executorPreference: loop) {
            do throws(IOFailure) {
                try await client.connection(to: address)
                for message in messages {
                    let bytes = Array(message.utf8)
                    try await client.sendBytes(bytes)
                    var echoed: [UInt8] = []
                    while echoed.count < bytes.count {
                        let more = try await client.readBytes(upTo: bytes.count - echoed.count)
                        guard !more.isEmpty else { throw IOFailure.connectionReset }
                        echoed += more
                    }
                    say(String(decoding: echoed, as: UTF8.self))
                }
                outcome.value = .success(())
            } catch {
                outcome.value = .failure(error)
            }
            client.close()
            loop.stop()
        }
        loop.run()
        if case .failure(let failure) = outcome.value {
            throw SendFailure(address: address, failure: failure)
        }
    }
}

/// Why `send` failed: the address and the typed failure (exit status 1, no usage text).
struct SendFailure: Error, CustomStringConvertible {
    var address: SocketAddress
    var failure: IOFailure
    var description: String { "\(address): \(failure)" }
}

/// Writes a line to standard output at once (a pipe would buffer `print`).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}
