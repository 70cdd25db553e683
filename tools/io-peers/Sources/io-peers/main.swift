// io-peers echo-server: a swift-nio TCP echo server on 127.0.0.1 with one event loop
// thread (as RingLoop's server has one loop thread). Prints "ready PORT", serves until its
// standard input closes.
import Foundation
import NIOCore
import NIOPosix

/// Writes back what it reads, flushing at the end of each read burst (NIO's own echo
/// example).
final class EchoHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.first == "echo-server" else {
    FileHandle.standardError.write(Data("usage: io-peers echo-server\n".utf8))
    exit(64)
}
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(EchoHandler()) }
    }
let server = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
FileHandle.standardOutput.write(Data("ready \(server.localAddress?.port ?? 0)\n".utf8))
// Serve until the parent closes our standard input.
while let _ = readLine() {}
try server.close().wait()
try group.syncShutdownGracefully()
