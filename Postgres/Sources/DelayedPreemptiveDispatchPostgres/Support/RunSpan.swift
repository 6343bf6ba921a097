import Instrumentation
import Tracing

/// The span of one run (P18), as OpenTelemetry's messaging conventions model a consumer that
/// processes a batch: kind `.consumer`, named `"<queue name> process"`, with a link to the
/// stored context of each submission the burst coalesced (see ``TraceCarrier``) and these
/// attributes only, never the key or the value:
///
/// | Attribute | Value |
/// |---|---|
/// | `messaging.system` | `"dpd.postgres"` |
/// | `messaging.destination.name` | the queue's name |
/// | `messaging.operation.type` | `"process"` |
/// | `messaging.batch.message_count` | the burst's submissions, also those beyond the links' bound |
/// | `dpd.attempt` | the run's attempt, as ``PostgresBurstRun/attempt`` |
/// | `dpd.fence` | the claim's fence, as ``PostgresBurstRun/fence`` |
///
/// Its parent is the context current where the worker runs (`run` was called), usually none,
/// so that each run starts a trace of its own. A retried or taken-over run is a new span with
/// the same links.
enum RunSpan {
  /// Starts the span of a run of `burst` with `tracer`. A span that does not record (the
  /// `NoOpTracer`'s, when no tracer was bootstrapped) gets no attributes and no links, so the
  /// stored contexts are not even decoded.
  static func start(for burst: ClaimedBurst, queue name: String, tracer: any Tracer) -> any Span {
    let span = tracer.startSpan(
      "\(name) process", context: ServiceContext.current ?? .topLevel, ofKind: .consumer)
    guard span.isRecording else { return span }
    span.updateAttributes { attributes in
      attributes["messaging.system"] = "dpd.postgres"
      attributes["messaging.destination.name"] = name
      attributes["messaging.operation.type"] = "process"
      attributes["messaging.batch.message_count"] = burst.submissions
      attributes["dpd.attempt"] = burst.attempt
      attributes["dpd.fence"] = burst.fence
    }
    if let contexts = burst.traceContexts {
      for link in TraceCarrier.links(fromJSONArray: contexts, with: tracer) {
        span.addLink(link)
      }
    }
    return span
  }

  /// Ends the span of a run: `error`, the handler's error (or ``ValueNotDecodable``), is recorded
  /// on it, and its status is then `.error`.
  static func end(_ span: any Span, recording error: (any Error)?) {
    if let error {
      span.recordError(error)
      span.setStatus(SpanStatus(code: .error))
    }
    span.end()
  }

  /// What a run's span records when the burst's value does not decode, in place of the queue's
  /// `valueNotDecodable`, which names the key and quotes the decoder (and so maybe the value).
  struct ValueNotDecodable: Error, CustomStringConvertible {
    var description: String { "the burst's value does not decode as the queue's Value type" }
  }
}
