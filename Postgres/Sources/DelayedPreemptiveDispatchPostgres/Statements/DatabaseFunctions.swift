/// The rules of submission as functions in the database (rule P15), which `migrate()` installs:
/// the Swift client and SQL callers (a trigger, a service in another language, `psql`) use the
/// same ones, so the rules exist once.
///
/// - `dpd_submit(…)` is the set-based upsert of ``DelayStatement`` (a batch of keys with their
///   values and delays, and the options). Its body is that statement's SQL, unchanged: the
///   statement's placeholders `$1`… are the function's parameters in the same order. The Swift
///   client calls it for every batch, of one submission or of hundreds. A call of one
///   submission without a trace context runs the upsert's single form (the same rules, reading
///   one row instead of unnesting the arrays; see ``DelayStatement/upsertSQL(tracingContexts:single:)``).
/// - `dpd_delay(queue, key, delay, value, …)` is one submission from SQL: it reads the options
///   that `migrate()` stored under the queue's name (`dpd_queues`), lets named, defaulted
///   parameters override them for this call, checks its input as the Swift `delay` does (a
///   negative `max_wait` or `minimum_spacing` is refused, naming the parameter, as the Swift
///   options stop the program; a negative `delay` counts as zero, as it does in Swift), and
///   calls `dpd_submit` with one row.
/// - `dpd_cancel(queue, key)` and `dpd_flush(queue, key)` are ``CancelStatement`` and
///   ``FlushStatement``'s rules; the Swift `cancel` and `flush` call them too.
/// - `dpd_claim(…)` is ``ClaimStatement``'s claim of due rows; its body is that statement's
///   SQL (``ClaimStatement/body``), unchanged. It plans the claim once per session, with the
///   plan for any parameters (`plan_cache_mode = force_generic_plan`): the claim's plan for
///   given parameters took about a third of its time to make (0.34 ms of a claim of 32 rows),
///   and PostgreSQL would otherwise make one at every call, as it judges the plan for any
///   parameters by a limit of a tenth of the table's rows. The claim names the keys it locked
///   as an array as well, so that the plan for any limit reads them by their key and is as
///   quick as the one made for 32 rows (0.8 ms and 1.1 ms, with the planning).
/// - `dpd_submit_committed`, `dpd_cancel_committed` and `dpd_flush_committed` are procedures
///   that call `dpd_submit`, `dpd_cancel` and `dpd_flush` and then `COMMIT`, so that the answer
///   of the queue's own `delay`, `cancel` and `flush` comes after the commit, never before it
///   (see ``CommittingStatement``). They take the same arguments, and the answer as a last
///   `INOUT` argument (`NULL` in).
/// - `dpd_end_stale_run(claim)` ends the backend of a transactional run whose claim was taken
///   over, if its transaction is still open: the claim that takes a burst over calls it
///   (``ClaimStatement``), so that the stale run's row locks are released at once instead of
///   when its worker wakes up. It finds the backend by the `application_name` the run set for its
///   transaction (``TransactionStatements/runMarkerPrefix``), and ends only one whose role the
///   caller has the privileges of, as `pg_terminate_backend` demands; it returns whether it
///   ended one, and false instead of an error where it may not.
///
/// They are PL/pgSQL functions, so that each session plans their statements once and reuses the
/// plan, as it does for a prepared statement. `migrate()` installs them when the installed text
/// differs from this package's (`dpd_schema.functions` holds its `md5`), so that every replica
/// of one release finds the same functions, and the last replica to migrate wins, as it does
/// for the stored options.
enum DatabaseFunctions {
  /// The statements that create or replace the functions, one string for `EXECUTE`.
  static let installation = """
    \(Schema.clock)

    CREATE OR REPLACE FUNCTION dpd_submit(text, text[], text[], float8[], boolean, float8, int8,
      boolean, float8, text[] DEFAULT NULL)
    RETURNS boolean LANGUAGE plpgsql AS $dpd_submit$
    #variable_conflict use_column
    DECLARE
      notified boolean;
      \(DelayStatement.now) timestamptz := dpd_now();
      \(DelayStatement.cap) int8 := coalesce($7, 2147483647);
    BEGIN
      IF $10 IS NULL AND cardinality($2) = 1 THEN
        \(DelayStatement.upsertSQL(tracingContexts: false, single: true))
        INTO notified;
      ELSIF $10 IS NULL THEN
        \(DelayStatement.upsertSQL(tracingContexts: false))
        INTO notified;
      ELSE
        \(DelayStatement.upsertSQL(tracingContexts: true))
        INTO notified;
      END IF;
      RETURN notified;
    END
    $dpd_submit$;

    CREATE OR REPLACE FUNCTION dpd_delay(queue text, key text, delay interval, value jsonb,
      deadline_policy text DEFAULT NULL, max_wait interval DEFAULT NULL,
      max_submissions integer DEFAULT NULL, merge text DEFAULT NULL,
      minimum_spacing interval DEFAULT NULL, trace_context jsonb DEFAULT NULL)
    RETURNS void LANGUAGE plpgsql AS $dpd_delay$
    #variable_conflict use_column
    DECLARE
      stored dpd_queues%ROWTYPE;
      policy text;
      mode text;
      wait_ms float8;
      cap int8;
      spacing_ms float8;
    BEGIN
      \(checks("dpd_delay"))
      IF dpd_delay.delay IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'dpd_delay: delay must not be null';
      END IF;
      IF max_wait < interval '0' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = format('dpd_delay: max_wait must not be negative (NULL for the queue''s own), '
            'not %s', max_wait);
      END IF;
      IF minimum_spacing < interval '0' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = format('dpd_delay: minimum_spacing must not be negative (NULL for the '
            'queue''s own, 0 for none), not %s', minimum_spacing);
      END IF;
      IF dpd_delay.value IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004',
          MESSAGE = 'dpd_delay: value must not be null (a JSON null is ''null''::jsonb)';
      END IF;
      SELECT * INTO stored FROM dpd_queues AS q WHERE q.name = dpd_delay.queue;
      IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = '\(unknownQueueState)',
          MESSAGE = format('dpd_delay: no queue named %L was migrated in this database', queue),
          HINT = 'A PostgresDelayedPreemptiveQueue of that name stores its options when it runs migrate().';
      END IF;
      policy := coalesce(deadline_policy, stored.deadline_policy);
      IF policy NOT IN ('extend', 'restart') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = format('dpd_delay: deadline_policy must be ''extend'' or ''restart'', not %L', policy);
      END IF;
      mode := coalesce(merge, stored.merge);
      IF mode NOT IN ('replace', 'append') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = format('dpd_delay: merge must be ''replace'' or ''append'', not %L', mode);
      END IF;
      IF mode = 'append' AND jsonb_typeof(dpd_delay.value) <> 'array'
        AND merge IS DISTINCT FROM stored.merge
      THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = format('dpd_delay: merge => ''append'' (this call''s, over the %L of queue '
            '%L) appends values: value must be a JSON array, not %s', stored.merge, queue,
            jsonb_typeof(dpd_delay.value));
      ELSIF mode = 'append' AND jsonb_typeof(dpd_delay.value) <> 'array' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = format('dpd_delay: queue %L appends values: value must be a JSON array, not %s',
            queue, jsonb_typeof(dpd_delay.value));
      END IF;
      IF max_submissions IS NOT NULL AND max_submissions < 1 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = format('dpd_delay: max_submissions must be at least 1, not %s', max_submissions);
      END IF;
      wait_ms := CASE WHEN max_wait IS NULL THEN stored.max_wait_ms
        ELSE \(milliseconds("max_wait")) END;
      cap := coalesce(max_submissions, stored.max_submissions);
      spacing_ms := CASE WHEN minimum_spacing IS NULL THEN stored.minimum_spacing_ms
        ELSE \(milliseconds("minimum_spacing")) END;
      PERFORM dpd_submit(queue, ARRAY[dpd_delay.key], ARRAY[dpd_delay.value::text],
        ARRAY[\(milliseconds("dpd_delay.delay"))], policy = 'restart', wait_ms, cap,
        mode = 'append', spacing_ms,
        CASE WHEN trace_context IS NULL THEN NULL ELSE ARRAY[trace_context::text] END);
    END
    $dpd_delay$;

    CREATE OR REPLACE FUNCTION dpd_cancel(queue text, key text,
      minimum_spacing interval DEFAULT NULL)
    RETURNS boolean LANGUAGE plpgsql AS $dpd_cancel$
    #variable_conflict use_column
    DECLARE cancelled integer;
    BEGIN
      \(checks("dpd_cancel"))
      IF minimum_spacing IS NULL
        AND NOT EXISTS (SELECT FROM dpd_queues AS q WHERE q.name = dpd_cancel.queue)
      THEN
        RAISE EXCEPTION USING ERRCODE = '\(unknownQueueState)',
          MESSAGE = format('dpd_cancel: no queue named %L was migrated in this database', queue),
          HINT = 'A PostgresDelayedPreemptiveQueue of that name stores its options when it runs migrate().';
      END IF;
      \(CancelStatement.rules(
        name: "queue", key: "dpd_cancel.key",
        spacing: """
          coalesce(\(milliseconds("minimum_spacing")),
            (SELECT q.minimum_spacing_ms FROM dpd_queues AS q WHERE q.name = queue), 0)
          """))
      INTO cancelled;
      RETURN cancelled > 0;
    END
    $dpd_cancel$;

    CREATE OR REPLACE FUNCTION dpd_flush(queue text, key text)
    RETURNS boolean LANGUAGE plpgsql AS $dpd_flush$
    #variable_conflict use_column
    DECLARE flushed boolean;
    BEGIN
      \(checks("dpd_flush"))
      \(FlushStatement.rules(name: "queue", key: "dpd_flush.key"))
      INTO flushed;
      RETURN flushed;
    END
    $dpd_flush$;

    CREATE OR REPLACE PROCEDURE dpd_submit_committed(text, text[], text[], float8[], boolean,
      float8, int8, boolean, float8, text[], INOUT notified boolean)
    LANGUAGE plpgsql AS $dpd_submit_committed$
    BEGIN
      notified := dpd_submit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);
      COMMIT;
    END
    $dpd_submit_committed$;

    CREATE OR REPLACE PROCEDURE dpd_cancel_committed(queue text, key text,
      minimum_spacing interval, INOUT cancelled boolean)
    LANGUAGE plpgsql AS $dpd_cancel_committed$
    BEGIN
      cancelled := dpd_cancel(queue, key, minimum_spacing);
      COMMIT;
    END
    $dpd_cancel_committed$;

    CREATE OR REPLACE PROCEDURE dpd_flush_committed(queue text, key text, INOUT flushed boolean)
    LANGUAGE plpgsql AS $dpd_flush_committed$
    BEGIN
      flushed := dpd_flush(queue, key);
      COMMIT;
    END
    $dpd_flush_committed$;

    CREATE OR REPLACE FUNCTION dpd_end_stale_run(stale uuid)
    RETURNS boolean LANGUAGE plpgsql AS $dpd_end_stale_run$
    DECLARE ended boolean;
    BEGIN
      SELECT bool_or(pg_terminate_backend(a.pid)) INTO ended
      FROM pg_stat_activity AS a
      WHERE a.application_name = '\(TransactionStatements.runMarkerPrefix)' || stale::text
        AND a.pid <> pg_backend_pid() AND pg_has_role(a.usesysid, 'USAGE');
      RETURN coalesce(ended, false);
    EXCEPTION WHEN insufficient_privilege THEN
      RETURN false;
    END
    $dpd_end_stale_run$;

    CREATE OR REPLACE FUNCTION dpd_claim(text, int8, text, float8, int8, float8)
    RETURNS TABLE (claimed_key text, claimed_value text, claimed_claim uuid, claimed_attempts int4,
      claimed_fence int8, claimed_exhausted boolean, claimed_taken_over boolean,
      claimed_lateness float8, claimed_contexts text, claimed_count int8, claimed_ended boolean)
    LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $dpd_claim$
    BEGIN
      RETURN QUERY \(ClaimStatement.body);
    END
    $dpd_claim$;
    """

  /// The SQLSTATE that `dpd_delay` raises for a queue name that no `migrate()` stored, and
  /// `dpd_cancel` too when it is not given `minimum_spacing` (which it would read from the stored
  /// options); the Swift `cancel` always gives it, so a replica that never migrated may cancel.
  static let unknownQueueState = "DPD02"

  /// The checks of a queue name and a key that every SQL function makes, as the Swift calls do
  /// before they send anything: the errors name the function and the parameter.
  private static func checks(_ function: String) -> String {
    """
    IF queue IS NULL OR queue = '' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = '\(function): queue must not be empty';
      END IF;
      IF \(function).key IS NULL OR \(function).key = '' THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = '\(function): key must not be empty';
      END IF;
      IF octet_length(\(function).key) > \(PostgresDelayedPreemptiveQueue<Int>.maximumKeyBytes) THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
          MESSAGE = format('\(function): key must be at most \(
            PostgresDelayedPreemptiveQueue<Int>.maximumKeyBytes) bytes of UTF-8, not %s',
            octet_length(\(function).key));
      END IF;
    """
  }

  /// An `interval` in milliseconds, as the statements take durations: a negative one counts as
  /// zero where the rules say so, and beyond 200 years it saturates, as `Duration` does.
  private static func milliseconds(_ interval: String) -> String {
    "least(extract(epoch FROM \(interval)) * 1000, \(Duration.longestMilliseconds))::float8"
  }
}
