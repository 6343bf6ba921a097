import Foundation
import Instrumentation
import Tracing

/// A submission's trace context as the queue stores it (P18): the fields that the tracer's
/// `inject` writes into a dictionary (W3C `traceparent` and `tracestate` with the usual
/// instruments), as a JSON object. `delay` stores one per submission, only when the calling
/// task has a current `ServiceContext` and the tracer injects something into it; a run's span
/// reads them back with the tracer's `extract` and links to each.
enum TraceCarrier {
  /// A burst keeps the contexts of at most this many of its submissions: all of them up to
  /// this bound, beyond it the first and the newest 127. Its submission count is kept apart, so
  /// it is exact however many there were.
  static let maximumPerBurst = 128

  /// The longest carrier stored, in bytes of JSON: a `traceparent` (55 characters) with the
  /// longest `tracestate` W3C allows (512) fits. A carrier over it (an instrument that also
  /// propagates large baggage, say) is not stored, so that a submission's tracing never costs
  /// more than this.
  static let maximumBytes = 1024

  /// `context` injected by `tracer`, as the JSON text that `delay` stores; "" when there is
  /// nothing to store: no context, a tracer that injects nothing (`NoOpTracer`), or a carrier
  /// that PostgreSQL's `jsonb` cannot hold (a NUL character) or over ``maximumBytes``.
  static func json(injecting context: ServiceContext?, with tracer: any Tracer) -> String {
    guard let context else { return "" }
    var fields: [String: String] = [:]
    tracer.inject(context, into: &fields, using: DictionaryInjector())
    guard !fields.isEmpty,
      !fields.contains(where: { $0.key.utf8.contains(0) || $0.value.utf8.contains(0) })
    else { return "" }
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    guard let data = try? encoder.encode(fields), data.count <= maximumBytes else { return "" }
    return String(decoding: data, as: UTF8.self)
  }

  /// Links to the contexts stored with a burst's submissions: `json` is their JSON array, as the
  /// claim reads it, each one extracted by `tracer`. A carrier that `tracer` extracts nothing
  /// from (stored by another instrument) gives no link.
  static func links(fromJSONArray json: String, with tracer: any Tracer) -> [SpanLink] {
    guard let carriers = try? JSONDecoder().decode([[String: String]].self, from: Data(json.utf8))
    else { return [] }
    return carriers.compactMap { fields in
      var context = ServiceContext.topLevel
      tracer.extract(fields, into: &context, using: DictionaryExtractor())
      return context.isEmpty ? nil : SpanLink(context: context, attributes: [:])
    }
  }
}

/// Writes a tracer's fields into a dictionary.
private struct DictionaryInjector: Injector {
  func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
    carrier[key] = value
  }
}

/// Reads a tracer's fields from a dictionary.
private struct DictionaryExtractor: Extractor {
  func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
