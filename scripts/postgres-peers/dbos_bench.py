"""DBOS's keyed debouncer beside the Postgres package: debounce submissions/s on the same server.

    py="$(scripts/postgres-peers/setup.sh)"
    DPD_POSTGRES_URL="$(scripts/postgres.sh start)" "$py" scripts/postgres-peers/dbos_bench.py

Prints one JSON line per figure on stdout; progress and DBOS's own log go to stderr. Exits
non-zero, printing no figure for the failed step, when the server is unreachable or a step
fails.

DBOS is launched once in this process with its system database on DPD_POSTGRES_URL (schema
`dbos`, created by DBOS's own migrations at launch) and a SQLAlchemy pool of
`--max-connections` connections (64: one per producer up to 64). A no-op workflow is
registered and debounced with `Debouncer.create(workflow).debounce(key, 3600, value)`: the
analogue of one `delay(key, for: 3600 s, value:)`, nothing due during the measurement.

For each producer count P, P threads (DBOS's debouncer is a blocking API; its
`debounce_async` only hands the call to asyncio's default thread pool) each call `debounce`
in a loop over their keys until they have made their share of `--calls-per-point`, or until
the point's time box (`--time-box`, 10 s) has passed; submissions/s = calls made / wall time.
Mixes: "distinct" (every key new) and "hot" (per producer, 9 calls in 10 use a new key and 1
in 10 one of 100 hot keys, which DBOS coalesces into the key's existing delayed workflow).
The pool's connections are opened before the clock starts, and DBOS's tables are truncated
between points. The key mixes, the options of a point and the output's plumbing are
peers_common.py's, beside this file, shared with pgqueuer_bench.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from importlib.metadata import version

# peers_common.py is beside this file: sys.path[0] when it runs as a script, from any folder.
from peers_common import HOT_KEYS, BenchError, database_url, emit_submit, log, run_main
from peers_common import add_mix_arguments, add_size_arguments, check_point_arguments
from peers_common import key_for, submit_points

PERIOD_SEC = 3600.0
WORKFLOW_NAME = "dpd_peers_burst"


def sqlalchemy_url(url: str) -> str:
    """postgres:// (libpq's spelling, as scripts/postgres.sh prints) -> postgresql://."""
    if url.startswith("postgres://"):
        return "postgresql://" + url[len("postgres://"):]
    return url


def check_server(url: str) -> None:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=10) as connection:
            connection.execute("SELECT 1")
    except Exception as error:
        raise BenchError(f"cannot connect to the database: {error!r}") from error


def watchdog(seconds: float, what: str) -> threading.Timer:
    """Ends the process with status 1 if `what` is still running after `seconds`."""
    def expire() -> None:
        log(f"failed: {what} still running after {seconds:g} s (server stuck?)")
        os._exit(1)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def run_threads(count: int, body) -> list:
    """Runs body(i) on `count` threads; returns their results, re-raising the first error."""
    results: list = [None] * count
    errors: list[BaseException] = []

    def target(i: int) -> None:
        try:
            results[i] = body(i)
        except BaseException as error:  # noqa: BLE001 - re-raised below
            errors.append(error)

    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise BenchError(f"a producer failed: {errors[0]!r}") from errors[0]
    return results


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        from dbos import DBOS, Debouncer

        self.args = args
        self.url = sqlalchemy_url(database_url())
        check_server(self.url)
        self.DBOS = DBOS
        DBOS(config={
            "name": "dpd-peers-bench",
            "system_database_url": self.url,
            "sys_db_pool_size": args.max_connections,
            "log_level": "WARNING",
        })

        @DBOS.workflow(name=WORKFLOW_NAME)
        def burst(value: int) -> int:
            return value

        self.debouncer = Debouncer.create(burst)
        log("launching DBOS (system database migrations on first launch)")
        DBOS.launch()

    def close(self) -> None:
        self.DBOS.destroy()

    def clear(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            # Every table of DBOS's that references workflow_status goes with it.
            connection.execute("TRUNCATE dbos.workflow_status CASCADE")

    def stored(self) -> tuple[int, int]:
        """(workflows of the bench's workflow, of which DELAYED and debounced)."""
        import psycopg

        with psycopg.connect(self.url) as connection:
            row = connection.execute(
                "SELECT count(*), count(*) FILTER (WHERE status = 'DELAYED' AND is_debounced)"
                " FROM dbos.workflow_status WHERE name = %s",
                (WORKFLOW_NAME,),
            ).fetchone()
            return row[0], row[1]

    def point(self, producers: int, per_producer: int, mix: str) -> tuple[float, int, int, bool]:
        """Returns (submissions/s, calls, workflows stored, time box hit)."""
        run = f"r{os.getpid()}-{time.monotonic_ns()}"
        self.clear()
        # Open the pool's connections before the clock: one call from as many threads at once.
        warm = min(producers, self.args.max_connections)
        run_threads(warm, lambda i: self.debouncer.debounce(f"warm-{run}-{i}", PERIOD_SEC, 0))
        self.clear()

        debounce = self.debouncer.debounce
        stop_at = 0.0  # one deadline for all producers, set when the clock starts

        def producer(p: int) -> tuple[int, set[str]]:
            keys: set[str] = set()
            made = 0
            for index in range(per_producer):
                if time.perf_counter() >= stop_at:
                    break
                key = key_for(run, mix, p, index)
                debounce(key, PERIOD_SEC, index)
                keys.add(key)
                made += 1
            return made, keys

        started = time.perf_counter()
        stop_at = started + self.args.time_box
        results = run_threads(producers, producer)
        elapsed = time.perf_counter() - started
        calls = sum(made for made, _ in results)
        keys = set().union(*(k for _, k in results))
        total, delayed = self.stored()
        if total != len(keys) or delayed != total:
            raise BenchError(
                f"{producers} producers, {mix}: {len(keys)} keys debounced but {total} workflows"
                f" stored ({delayed} delayed and debounced)"
            )
        self.clear()
        return calls / elapsed, calls, total, calls < producers * per_producer


def note(mix: str, per_producer: int, pool: int, connections: int, calls: int,
         workflows: int, boxed: bool, box: float) -> str:
    text = (
        "Debouncer.debounce(key, 3600 s, value) per call from P threads of one Python process"
        f" (blocking API), SQLAlchemy/psycopg pool of {pool} connections, at most"
        f" {connections} busy (pool_pre_ping, DBOS's default); a new key costs a bounce"
        " transaction (UPDATE of a DELAYED debounced workflow with that key: none; SELECT of"
        " the key's holder: none)"
        " then an enqueue transaction (INSERT into dbos.workflow_status, UPDATE to DELAYED on"
        " DBOS's internal queue with the key as deduplication_id and delay_until, INSERT of the"
        " inputs): one durable workflow per key, run once its delay passes; a repeated key is one"
        " transaction (UPDATE of that workflow's delay_until, upsert of its inputs): last value"
        " wins and the due time moves, like delay's preemption;"
        f" up to {per_producer} calls per producer, stopping {box:g} s after the clock started"
        f" ({'hit' if boxed else 'not hit'}); {calls} calls, {workflows} workflows stored;"
        " tables truncated between points"
    )
    if mix == "hot":
        text += f"; hot mix: 1 call in 10 reuses one of {HOT_KEYS} hot keys"
    return text


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_size_arguments(parser, unit="calls", calls_per_point=3_000)
    parser.add_argument("--time-box", type=float, default=10.0,
                        help="seconds after which producers stop calling (default 10)")
    add_mix_arguments(parser, max_connections_help="DBOS's system database pool size"
                                                    " (sys_db_pool_size)")
    args = parser.parse_args()
    check_point_arguments(parser, args)
    return args


def bench(args: argparse.Namespace) -> None:
    contender = f"DBOS {version('dbos')}"
    timer = watchdog(180, "DBOS's launch")
    peer = Bench(args)
    timer.cancel()
    try:
        for producers, per_producer, mix in submit_points(args):
            log(f"debounce: {producers} producers x up to {per_producer}, {mix}")
            timer = watchdog(args.time_box + 120, f"the point of {producers} producers")
            rate, calls, workflows, boxed = peer.point(producers, per_producer, mix)
            timer.cancel()
            emit_submit(contender, mix, producers, rate,
                        note(mix, per_producer, args.max_connections,
                             min(producers, args.max_connections), calls, workflows, boxed,
                             args.time_box))
    finally:
        try:
            peer.close()
        except Exception as error:  # noqa: BLE001
            log(f"DBOS.destroy failed: {error!r}")


def main() -> int:
    args = parse_arguments()
    return run_main(lambda: bench(args))


if __name__ == "__main__":
    sys.exit(main())
