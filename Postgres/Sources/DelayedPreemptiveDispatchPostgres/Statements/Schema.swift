import PostgresNIO

/// The tables of every ``PostgresDelayedPreemptiveQueue``, versioned.
///
/// `dpd_bursts` holds one row per (queue name, key) while the key has work: waiting, running, or
/// failed. `due_at` is the instant the row may next be claimed: the deadline while it waits,
/// the lease's expiry while it runs. `generation` counts submissions; a run remembers the
/// generation it claimed, so that its end can tell whether a submission arrived meanwhile.
///
/// Version 2 adds the fence: every claim takes the next value of the sequence `dpd_fence`, so
/// fences grow strictly per key across every replica, also after a key's row was deleted and
/// created again; and an index on `claim`, on which a worker renews all its leases at once.
///
/// Version 3 lets a row hold several bursts of its key, in order: `value` is the head burst's
/// (the one that runs next, or runs now), `later` the values of the bursts behind it, oldest
/// first, and `submissions` how many submissions the newest burst has received. A burst is
/// behind the head when it was submitted during the head's run, or after the burst before it
/// reached `maxSubmissions`; only the newest burst takes further submissions. `deadline` and
/// `first_submitted` are the newest burst's; a burst that reached `maxSubmissions` has its
/// deadline set to the instant it did, so it is due at once. Rows of version 2 that held a
/// burst submitted during a run (`generation > claimed_generation`) get it in `later`.
///
/// Version 4 adds `minimumSpacing` across replicas: `last_start` is the start of the key's latest
/// run on the database's clock (the claim's instant, moved to the handler's start when the run's
/// end is recorded), or null after a `flush` lifted the spacing; and `idle` marks a row that holds
/// no burst, kept only to remember `last_start` while the spacing needs it: its `due_at` is
/// `last_start` + the spacing, and a claim deletes it once that instant has passed. Every statement that makes a burst due (a submission, the end of
/// a run, a retry, a takeover) makes it due no sooner than `last_start` + the spacing, so a claim
/// needs to check only `due_at`. The index on due rows leaves idle rows out; another one finds
/// the idle rows whose spacing has passed.
///
/// Version 5 adds `traces`, the bursts' trace records (P18), one JSON object per burst in the
/// row's order (the head's first, then those of `later`): `contexts`, the trace contexts stored
/// with the burst's submissions (``TraceCarrier``; the first and the newest, 128 in all), and
/// `count`, the burst's submissions, fixed when a burst behind it starts (until then the row's
/// `submissions` counts them). The newest burst's record may be missing (nothing was stored for
/// it yet), so the array holds as many records as the row has bursts, or one fewer: a row with
/// no trace context and one burst holds `[]`, and a submission without a trace context adds
/// nothing. Rows of an earlier version get an empty record for each burst but the newest.
///
/// Version 6 adds the functions of submission (``DatabaseFunctions``: `dpd_submit`, `dpd_delay`,
/// `dpd_cancel`, `dpd_flush`) and `dpd_queues`, each queue's options under its name, which
/// `migrate()` stores so that `dpd_delay` applies the same rules as the Swift queue of that name.
/// `dpd_schema.functions` is the `md5` of the installed functions' text: every migration
/// replaces them when this package's text differs, so a new release (or an older one, migrating
/// last) installs its own.
/// Version 6 also keeps failures apart from the bursts (P17): `dpd_failures` holds one row per kept
/// failure, with its own `id` (from a sequence: the order in which they were kept), its queue
/// `name` and `key`, its `value` (with `.append`, its whole array), its `attempts`, its
/// `last_error`, the instant it was kept (`failed_at`, on the database's clock) and its trace
/// record (`traces`, the head's record of `dpd_bursts.traces` with its submission count fixed),
/// so that a key may have several kept failures beside its waiting or running bursts. The
/// statement that ends a burst for good writes its failure there and, in the same statement,
/// lets the key's row go on with the bursts behind it, or removes it as a successful end does.
/// `dpd_bursts.failed` stays for the replicas of the previous release, and is never set from
/// this version on: the rows of version 5 that were kept as failed move to `dpd_failures`
/// (their `failed_at` is the instant of the migration), and their rows are deleted.
///
/// Version 7 reads time in one place: `dpd_now()` (``clock``) is the only reading of the clock in
/// every statement, function and column default; the defaults of `dpd_failures.failed_at` and
/// `dpd_queues.migrated_at` become `dpd_now()`.
///
/// Version 8 tells a row's closed bursts from its pending ones (T2, C4), so that `cancel` and
/// `flush` leave a closed burst alone, as in-process: `sealed` says that the newest burst takes
/// no more submissions (it reached `maxSubmissions`, a `flush` ended it, or it is a retried
/// failure), and `retried_first`
/// how many of the waiting bursts, first in line, are retried failures (``RetryFailuresStatement``).
/// Of a row's waiting bursts (the head, unless it is claimed, then those in `later`), the
/// pending ones are a head that waits for the retry of a run that threw, the retried failures
/// after it, and the newest burst while it is not sealed; every other one is closed: a decided
/// run, which `cancel` never drops and `flush` never moves (``CancelStatement``,
/// ``FlushStatement``). Rows written before this version get `retried_first` = all their waiting
/// bursts, so that `cancel` drops them all, as it did, and are sealed when their newest burst
/// has the `maxSubmissions` that their queue stored (a retried one has the largest `int4`).
enum Schema {
  /// The version this package writes and understands.
  static let version = 8

  /// The database's clock, as every statement, function and default reads it: `clock_timestamp()`,
  /// unless the session (or transaction) sets `dpd.now` to an instant, which tests do to move
  /// time by steps. A `LANGUAGE sql` function of one expression, which the planner inlines into
  /// each statement, so that it costs about what `clock_timestamp()` does; `VOLATILE`, as
  /// `clock_timestamp()` is. An empty setting (what a `RESET` leaves) is the real clock.
  static let clock = """
    CREATE OR REPLACE FUNCTION dpd_now() RETURNS timestamptz LANGUAGE sql VOLATILE AS $dpd_now$
      SELECT coalesce(nullif(current_setting('dpd.now', true), '')::timestamptz, clock_timestamp())
    $dpd_now$;
    """

  /// The SQLSTATE that the migration raises when the database is newer than this package.
  static let newerSchemaState = "DPD01"

  /// The installed version: one row, or none while the first migration has not committed.
  /// Refused with `42P01` when no queue was ever migrated in the database.
  static let installedVersion = PostgresQuery(unsafeSQL: "SELECT version FROM dpd_schema")

  /// One statement (a DO block runs in one transaction) so that it needs no explicit
  /// transaction; the advisory lock makes concurrent migrations from many replicas wait for the
  /// first one instead of racing on `CREATE TABLE IF NOT EXISTS`.
  static let migration = PostgresQuery(
    unsafeSQL: """
      DO $migration$
      DECLARE
        found integer;
        install text := $install$\(DatabaseFunctions.installation)$install$;
      BEGIN
        PERFORM pg_advisory_xact_lock(7238100917);
        CREATE TABLE IF NOT EXISTS dpd_schema (
          singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
          version integer NOT NULL
        );
        SELECT version INTO found FROM dpd_schema;
        IF found > \(version) THEN
          RAISE EXCEPTION USING ERRCODE = '\(newerSchemaState)', MESSAGE = found::text;
        END IF;
        IF found IS NULL THEN
          CREATE TABLE dpd_bursts (
            name text NOT NULL,
            key text NOT NULL,
            value jsonb NOT NULL,
            deadline timestamptz NOT NULL,
            due_at timestamptz NOT NULL,
            first_submitted timestamptz NOT NULL,
            generation bigint NOT NULL DEFAULT 1,
            claimed_generation bigint,
            claim uuid,
            owner text,
            attempts integer NOT NULL DEFAULT 0,
            failed boolean NOT NULL DEFAULT false,
            last_error text,
            PRIMARY KEY (name, key)
          );
          CREATE INDEX dpd_bursts_due ON dpd_bursts (name, due_at) WHERE NOT failed;
          CREATE INDEX dpd_bursts_failed ON dpd_bursts (name, key) WHERE failed;
          INSERT INTO dpd_schema (version) VALUES (1);
          found := 1;
        END IF;
        IF found < 2 THEN
          CREATE SEQUENCE dpd_fence;
          ALTER TABLE dpd_bursts ADD COLUMN fence bigint;
          CREATE INDEX dpd_bursts_claim ON dpd_bursts (claim) WHERE claim IS NOT NULL;
          UPDATE dpd_schema SET version = 2;
          found := 2;
        END IF;
        IF found < 3 THEN
          ALTER TABLE dpd_bursts
            ADD COLUMN later jsonb NOT NULL DEFAULT '[]'::jsonb,
            ADD COLUMN submissions integer NOT NULL DEFAULT 1;
          UPDATE dpd_bursts SET later = jsonb_build_array(value)
          WHERE claim IS NOT NULL AND generation > claimed_generation AND NOT failed;
          UPDATE dpd_schema SET version = 3;
          found := 3;
        END IF;
        IF found < 4 THEN
          ALTER TABLE dpd_bursts
            ADD COLUMN last_start timestamptz,
            ADD COLUMN idle boolean NOT NULL DEFAULT false;
          DROP INDEX IF EXISTS dpd_bursts_due;
          CREATE INDEX dpd_bursts_due ON dpd_bursts (name, due_at) WHERE NOT failed AND NOT idle;
          CREATE INDEX dpd_bursts_idle ON dpd_bursts (name, due_at) WHERE idle;
          UPDATE dpd_schema SET version = 4;
          found := 4;
        END IF;
        IF found < 5 THEN
          ALTER TABLE dpd_bursts ADD COLUMN traces jsonb NOT NULL DEFAULT '[]'::jsonb;
          UPDATE dpd_bursts
          SET traces = (SELECT jsonb_agg('{}'::jsonb) FROM jsonb_array_elements(later))
          WHERE later <> '[]'::jsonb;
          UPDATE dpd_schema SET version = 5;
          found := 5;
        END IF;
        IF found < 6 THEN
          CREATE TABLE dpd_queues (
            name text PRIMARY KEY,
            deadline_policy text NOT NULL,
            max_wait_ms float8,
            max_submissions bigint,
            merge text NOT NULL,
            minimum_spacing_ms float8 NOT NULL DEFAULT 0,
            migrated_at timestamptz NOT NULL DEFAULT clock_timestamp()
          );
          ALTER TABLE dpd_schema ADD COLUMN functions text;
          CREATE TABLE dpd_failures (
            id bigserial PRIMARY KEY,
            name text NOT NULL,
            key text NOT NULL,
            value jsonb NOT NULL,
            attempts integer NOT NULL,
            last_error text NOT NULL,
            failed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            traces jsonb NOT NULL DEFAULT '{}'::jsonb
          );
          CREATE INDEX dpd_failures_key ON dpd_failures (name, key, id);
          INSERT INTO dpd_failures (name, key, value, attempts, last_error, traces)
          SELECT name, key, value, attempts, coalesce(last_error, ''),
            jsonb_build_object('count', submissions) || coalesce(traces -> 0, '{}'::jsonb)
          FROM dpd_bursts WHERE failed ORDER BY name, key;
          DELETE FROM dpd_bursts WHERE failed;
          DROP INDEX IF EXISTS dpd_bursts_failed;
          UPDATE dpd_schema SET version = 6;
        END IF;
        IF found < 7 THEN
          \(clock)
          ALTER TABLE dpd_queues ALTER COLUMN migrated_at SET DEFAULT dpd_now();
          ALTER TABLE dpd_failures ALTER COLUMN failed_at SET DEFAULT dpd_now();
          UPDATE dpd_schema SET version = 7;
        END IF;
        IF found < 8 THEN
          ALTER TABLE dpd_bursts
            ADD COLUMN sealed boolean NOT NULL DEFAULT false,
            ADD COLUMN retried_first integer NOT NULL DEFAULT 0;
          UPDATE dpd_bursts AS b
          SET retried_first = (CASE WHEN claim IS NULL THEN 1 ELSE 0 END) + jsonb_array_length(later),
            sealed = b.submissions >= coalesce(
              (SELECT q.max_submissions FROM dpd_queues AS q WHERE q.name = b.name), 2147483647)
          WHERE NOT failed AND NOT idle;
          UPDATE dpd_schema SET version = 8;
        END IF;
        IF (SELECT functions FROM dpd_schema) IS DISTINCT FROM md5(install) THEN
          EXECUTE install;
          UPDATE dpd_schema SET functions = md5(install);
        END IF;
      END
      $migration$
      """)
}
