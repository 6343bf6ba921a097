import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Runs the executable at `path` with `posix_spawn` (Foundation's `Process` leaks under
/// LeakSanitizer), reads what it writes to `descriptor` (1 for stdout, 2 for stderr) until it
/// ends, and returns that text with its `waitpid` status. `environment` `nil` passes this
/// process's own.
func spawnAndRead(
  _ path: String, arguments: [String], environment: [String]?, descriptor: Int32
) throws -> (output: String, status: Int32) {
  var fds: [Int32] = [0, 0]
  guard fds.withUnsafeMutableBufferPointer({ pipe($0.baseAddress!) }) == 0 else {
    throw POSIXError(.EIO)
  }
  #if canImport(Darwin)
    var actions: posix_spawn_file_actions_t?
  #else
    var actions = posix_spawn_file_actions_t()
  #endif
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_adddup2(&actions, fds[1], descriptor)
  posix_spawn_file_actions_addclose(&actions, fds[0])
  var argv = ([path] + arguments).map { strdup($0) } + [nil]
  var envp = (environment ?? []).map { strdup($0) } + [nil]
  defer { for pointer in argv + envp { free(pointer) } }
  var pid: pid_t = 0
  let spawned =
    environment == nil
    ? posix_spawn(&pid, path, &actions, nil, &argv, environ)
    : posix_spawn(&pid, path, &actions, nil, &argv, &envp)
  close(fds[1])
  guard spawned == 0 else {
    close(fds[0])
    throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO)
  }
  var output: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 4_096)
  while true {
    let count = chunk.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
    if count <= 0 { break }
    output += chunk[0..<count]
  }
  close(fds[0])
  var status: Int32 = 0
  waitpid(pid, &status, 0)
  return (String(decoding: output, as: UTF8.self), status)
}
