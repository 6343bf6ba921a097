import Foundation
import Testing

/// The project's TCP proxy on loopback (`scripts/tcp-proxy.py`): what stands between a service
/// and its database in production (HAProxy, a virtual IP, a DNS name, the network itself), and
/// can be told to move (`target`), to drop every connection (`drop`), or to forward nothing
/// while closing nothing (`blackhole on`: a partition, no FIN, no RST).
final class TCPProxy: Sendable {
  let port: Int
  let controlPort: Int
  let process: Process

  /// `scripts/tcp-proxy.py`.
  static var script: String {
    PostgresScript.path.deletingLastPathComponent().appendingPathComponent("tcp-proxy.py").path
  }

  private init(port: Int, controlPort: Int, process: Process) {
    self.port = port
    self.controlPort = controlPort
    self.process = process
  }

  /// Starts a proxy in front of the server of `url` (a `postgres://` URL).
  static func start(to url: String) async throws -> TCPProxy {
    let portsFile = "\(NSTemporaryDirectory())dpd-proxy-\(UUID().uuidString.prefix(8)).ports"
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [
      "python3", script, "serve", "--target", "127.0.0.1:\(try port(of: url))",
      "--ports-file", portsFile,
    ]
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    // The proxy listens on ports the system picks, and says which in `portsFile`.
    var ports: [Int] = []
    let deadline = ContinuousClock.now + .seconds(30)
    while ports.count != 2 && ContinuousClock.now < deadline && process.isRunning {
      try await Task.sleep(for: .milliseconds(20))
      let text = (try? String(contentsOfFile: portsFile, encoding: .utf8)) ?? ""
      ports = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
    }
    try? FileManager.default.removeItem(atPath: portsFile)
    guard ports.count == 2 else {
      if process.isRunning { kill(process.processIdentifier, SIGKILL) }
      throw ProxyError(message: "the proxy did not start within 30 s")
    }
    return TCPProxy(port: ports[0], controlPort: ports[1], process: process)
  }

  /// `url` with its port replaced by the proxy's.
  func url(through url: String) throws -> String {
    let port = try Self.port(of: url)
    return url.replacingOccurrences(of: ":\(port)/", with: ":\(self.port)/")
  }

  /// Sends the proxy a command (`target HOST:PORT`, `drop`, `blackhole on`…), expects `ok`, and
  /// returns the answer.
  @discardableResult
  func control(_ words: String...) async throws -> String {
    let run = try await Command.run(
      "python3", [Self.script, "control", "\(controlPort)"] + words, timeout: .seconds(10))
    #expect(run.status == 0, "proxy \(words): \(run.output) \(run.errors)")
    return run.output
  }

  /// Points the proxy at the server of `url` for new connections.
  func target(_ url: String) async throws {
    try await control("target", "127.0.0.1:\(try Self.port(of: url))")
  }

  /// How many connections the proxy forwards now whose client has not closed its side (a
  /// close during a partition reaches the server only once it heals).
  func openConnections() async throws -> Int {
    let answer = try await control("status")
    let words = answer.split(whereSeparator: \.isWhitespace)
    guard let index = words.firstIndex(of: "clients"), index + 1 < words.count,
      let count = Int(words[index + 1])
    else { throw ProxyError(message: "no connection count in \(answer)") }
    return count
  }

  func stop() {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  }

  static func port(of url: String) throws -> Int {
    let afterColon = url.split(separator: ":").last ?? ""
    guard let port = Int(afterColon.split(separator: "/").first ?? "") else {
      throw ProxyError(message: "no port in \(url)")
    }
    return port
  }

  deinit { stop() }

  struct ProxyError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
  }
}
