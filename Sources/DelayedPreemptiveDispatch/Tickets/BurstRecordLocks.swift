/// The locks of every ``BurstRecord``: a fixed table of 64 stripes shared by all records of the
/// process. A record's address picks its stripe, whose lock guards the record's word, and whose
/// waiter table holds the tasks that await the record's tickets.
///
/// A record with a lock of its own cost 144 bytes (the lock box, and a block for a
/// `pthread_mutex_t` and the state), and a keyed instance keeps one record per pending key. A
/// record's lock is held only for a few instructions, never while another record's is taken and
/// never around user code, so shared ones serve: two records of one stripe wait for each other
/// only that long. Like ``LockBox``, it uses the ``PlatformLock``.
@usableFromInline
struct BurstRecordLocks: @unchecked Sendable {
  // Sound as `@unchecked Sendable`: the stripes are allocated and their locks and tables
  // initialised once, before `shared` publishes them (a `static let` is initialised exactly
  // once, thread-safely); they are never moved or freed, and a stripe's table is only read or
  // written while its lock is held.

  typealias Lock = PlatformLock.Primitive

  /// A task awaiting the outcome of submission `seq` of a record.
  typealias Waiter = (
    seq: UInt64, leading: Bool, continuation: CheckedContinuation<DelayOutcome, Never>
  )

  /// The waiting tasks of a stripe's records that have some, by record.
  typealias Table = [ObjectIdentifier: [Waiter]]

  /// One lock and its waiter table, in a cache line of its own.
  struct Stripe {
    let lock: UnsafeMutablePointer<Lock>
    let table: UnsafeMutablePointer<Table>

    @inline(__always)
    func acquire() { PlatformLock.acquire(lock) }

    @inline(__always)
    func release() { PlatformLock.release(lock) }
  }

  static let count = 64
  static let stripeSize = 64
  static let shared = BurstRecordLocks()

  let base: UnsafeMutableRawPointer

  private init() {
    let tableOffset = MemoryLayout<Table>.alignment
    precondition(
      (MemoryLayout<Lock>.size + tableOffset - 1) / tableOffset * tableOffset
        + MemoryLayout<Table>.size <= Self.stripeSize)
    base = UnsafeMutableRawPointer.allocate(
      byteCount: Self.count * Self.stripeSize, alignment: Self.stripeSize)
    for index in 0..<Self.count {
      let stripe = Self.stripe(at: index, in: base)
      stripe.table.initialize(to: [:])
      PlatformLock.initialize(stripe.lock)
    }
  }

  /// The stripe at `index`: its lock at the start of its line, its table after it.
  @inline(__always)
  static func stripe(at index: Int, in base: UnsafeMutableRawPointer) -> Stripe {
    let start = base + index * stripeSize
    let alignment = MemoryLayout<Table>.alignment
    let tableOffset = (MemoryLayout<Lock>.size + alignment - 1) / alignment * alignment
    return Stripe(
      lock: start.assumingMemoryBound(to: Lock.self),
      table: (start + tableOffset).assumingMemoryBound(to: Table.self))
  }

  /// The stripe of `record`, picked by its address: records are at least 32 bytes apart, so
  /// records allocated one after another take the stripes in turn.
  @inline(__always)
  static func stripe(for record: BurstRecord) -> Stripe {
    let address = UInt(bitPattern: ObjectIdentifier(record))
    return stripe(at: Int((address >> 5) & UInt(count - 1)), in: shared.base)
  }
}
