/// What a shell must do after an event of the ``BurstDriver``, outside its lock, performed by the
/// one interpreter, ``perform(startWorkers:arm:install:becameIdle:)``, in one order: resume the
/// waiters that learned a preemption, resolve the ended bursts' tickets, cancel the replaced
/// timer, start workers, arm the timer and install its handle (cancelling a timer that is no
/// longer the armed one), then leave the busy state.
@usableFromInline
struct BurstEffects: Sendable {
  /// How the tickets of the one burst this event ended resolve.
  @usableFromInline var resolution: BurstResolution?
  /// The same for an event that ended many bursts (a keyed timer firing, `cancelAll`,
  /// `flushAll`); `nil` rather than empty, so that the hot path carries no array.
  @usableFromInline var resolutions: [BurstResolution]?
  /// A burst record that learned a preemption while somebody awaits one of its tickets.
  @usableFromInline var preempted: BurstRecord?
  /// How many workers to start: each takes ready runs from the driver
  /// (``BurstDriver/nextRuns(finishing:batchLimit:)``) until there are none.
  @usableFromInline var workersToStart = 0
  @usableFromInline var timer: TimerRequest?
  /// The handle of the timer that `timer` replaces, or of the timer of an owner going away.
  @usableFromInline var cancelledTimer: TimerHandle?
  /// With `cancelsRunningTask`: the submission started a burst of a line whose run is running,
  /// which is stale now; the shell cancels that run's task.
  @usableFromInline var cancelsRunningRun = false
  /// Nothing was pending or running before this event, and something is now: the shell enters
  /// its busy state under its lock, before anything can end it.
  @usableFromInline var becameBusy = false
  /// Nothing is pending or running any more.
  @usableFromInline var becameIdle = false
  /// A timer firing left due timers: call ``BurstDriver/popDue(at:limit:)`` again, outside the
  /// lock.
  @usableFromInline var moreDue = false

  @inlinable
  init() {}

  /// Whether these effects ask for nothing, as a new value does. A shell that keeps one value
  /// for many events (the stream, one event per element, most of which ask for nothing) empties
  /// it again only when this is false: building and destroying a value per event costs more
  /// than the event's transition. Every stored property is checked
  /// (``storedPropertyCount``, which a test compares with the type's own).
  @inlinable var isEmpty: Bool {
    resolution == nil && resolutions == nil && preempted == nil && workersToStart == 0
      && timer == nil && cancelledTimer == nil && !cancelsRunningRun && !becameBusy
      && !becameIdle && !moreDue
  }

  /// The stored properties that ``isEmpty`` checks.
  static let storedPropertyCount = 10

  /// How many bursts this event ended.
  @inlinable var endedCount: Int { (resolution == nil ? 0 : 1) + (resolutions?.count ?? 0) }

  /// Adds how the tickets of one more ended burst resolve.
  @inlinable
  mutating func resolve(_ resolution: BurstResolution) {
    if self.resolution == nil {
      self.resolution = resolution
    } else {
      if resolutions == nil { resolutions = [] }
      resolutions!.append(resolution)
    }
  }

  /// The one interpreter of effects, for every shell: a shell says only how it starts a
  /// worker, how it arms its timer (`arm` returns the handle of the timer it armed for the
  /// request), how that handle reaches its driver (`install`, under its lock or in its
  /// isolation: ``BurstDriver/install(_:generation:)``) and what it does once idle. Every timer
  /// that is no longer the armed one is cancelled here, and only here: the one the driver
  /// replaced, and the one just armed when it was replaced, or fired, before it was installed.
  /// Call it outside the shell's lock: it resumes waiting tasks.
  @inlinable @inline(__always)
  func perform(
    startWorkers: (_ count: Int) -> Void, arm: (TimerRequest) -> TimerHandle,
    install: (TimerHandle, _ generation: UInt64) -> TimerHandle?, becameIdle: () -> Void
  ) {
    preempted?.resumeResolved()
    resolution?.apply()
    if let resolutions { for resolution in resolutions { resolution.apply() } }
    cancelledTimer?.cancel()
    if workersToStart > 0 { startWorkers(workersToStart) }
    if let timer { Self.arm(timer, arm: arm, install: install) }
    if self.becameIdle { becameIdle() }
  }

  /// Arms `timer` and installs its handle, cancelling what the driver hands back. Out of line:
  /// an event arms a timer only when the earliest deadline moves earlier, and the paths that
  /// arm none stay short.
  @inlinable @inline(never)
  static func arm(
    _ timer: TimerRequest, arm: (TimerRequest) -> TimerHandle,
    install: (TimerHandle, _ generation: UInt64) -> TimerHandle?
  ) {
    install(arm(timer), timer.generation)?.cancel()
  }

  /// Performs the effects of an owner going away (``BurstDriver/release()``): they end bursts
  /// and stop the timer, and start nothing.
  @inlinable
  func performRelease() {
    perform(startWorkers: { _ in }, arm: { _ in .none }, install: { _, _ in nil }, becameIdle: {})
  }
}
