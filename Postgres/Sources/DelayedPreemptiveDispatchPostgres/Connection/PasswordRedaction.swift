/// Returns `url` with its password replaced by `***`, for error messages and log lines (no
/// message ever contains a password).
///
/// `postgres://app:s3cret@db/app` becomes `postgres://app:***@db/app`. When in doubt, more goes:
/// if the user name holds a `/`, `?` or `#`, so that the credentials cannot be told apart from
/// the rest, everything between `://` and the last `@` becomes `***`; without an `@`, a host part
/// that is not `host[:port]` becomes `***`. The value of a `password=` query parameter (libpq
/// accepts one) becomes `***` too, and so does the password wherever else it appears.
func redactingPassword(_ url: String) -> String {
  let start = url.range(of: "://")?.upperBound ?? url.startIndex
  let rest = url[start...]
  if let at = rest.lastIndex(of: "@") {
    let redacted =
      String(url[..<start]) + redacted(credentials: rest[..<at])
      + redactingQueryPassword(rest[at...])
    return redactingPassword(in: redacted, of: url)
  }
  let hostEnd = rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex
  let host = rest[..<hostEnd]
  let hostAndPort = host.split(separator: ":", maxSplits: 1)
  let looksLikeHost = hostAndPort.count < 2 || hostAndPort[1].allSatisfy(\.isASCIIDigit)
  return String(url[..<start]) + (looksLikeHost ? String(host) : "***")
    + redactingQueryPassword(rest[hostEnd...])
}

/// Returns `text` with every occurrence of the password of `url` (as written, and decoded) replaced
/// by `***`: for a message that may quote part of a URL.
func redactingPassword(in text: String, of url: String) -> String {
  let start = url.range(of: "://")?.upperBound ?? url.startIndex
  guard let at = url[start...].lastIndex(of: "@"),
    let colon = url[start..<at].firstIndex(of: ":")
  else { return text }
  let written = String(url[url.index(after: colon)..<at])
  return redacting(written.removingPercentEscapes, in: redacting(written, in: text))
}

/// Returns `text` with every occurrence of `secret` replaced by `***`; `text` itself when `secret`
/// is nil or empty.
func redacting(_ secret: String?, in text: String) -> String {
  guard let secret, !secret.isEmpty else { return text }
  return text.replacing(secret, with: "***")
}

/// `user:***` for `user:password`; `***` when the user part looks like more than a user name.
private func redacted(credentials: Substring) -> String {
  let user = credentials.firstIndex(of: ":").map { credentials[..<$0] } ?? credentials
  if user.contains(where: { "/?#".contains($0) }) { return "***" }
  return user.endIndex == credentials.endIndex ? String(user) : String(user) + ":***"
}

/// Replaces the value of each `password=` parameter in the query of `tail` (the part of a URL
/// after its host) by `***`.
private func redactingQueryPassword(_ tail: Substring) -> String {
  guard let mark = tail.firstIndex(of: "?") else { return String(tail) }
  let parameters = tail[tail.index(after: mark)...]
    .split(separator: "&", omittingEmptySubsequences: false)
    .map { $0.hasPrefix("password=") ? "password=***" : String($0) }
  return String(tail[...mark]) + parameters.joined(separator: "&")
}

extension Character {
  fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
