"""pgqueuer beside the Postgres package: submissions/s and drain runs/s on the same server.

    py="$(scripts/postgres-peers/setup.sh)"
    DPD_POSTGRES_URL="$(scripts/postgres.sh start)" "$py" scripts/postgres-peers/pgqueuer_bench.py

Prints one JSON line per figure on stdout; progress goes to stderr. Exits non-zero, printing
no figure for the failed step, when the server is unreachable or a step fails.

Submissions: for each producer count P, P asyncio tasks, each making one `Queries.enqueue`
call per job (one job, one `dedupe_key`, `execute_after` one hour ahead: the analogue of one
`delay(key, for: 3600 s)` per request handler), over one asyncpg pool of min(P, 64)
connections (`--max-connections`) opened before the clock starts. Mixes: "distinct" (every
key new) and "hot" (per producer, 9 calls in 10 use a new key and 1 in 10 one of 100 hot keys;
pgqueuer rejects a dedupe_key that a queued job already holds with DuplicateJobError, which
the producer catches and counts as a handled call). Optionally one batched point (labelled
"submit_batched"): the same keys sent as lists of `--batched-size` jobs per call.

Drain: `--drain-workers` worker processes (this file with `--worker`), each a QueueManager
on its own asyncpg connection with a no-op entrypoint that counts its runs, are started and
left idle; then `--drain-jobs` jobs are enqueued (untimed, batches of 5,000) with
`execute_after` chosen so that all become due at one instant T after the last batch is in,
and the queue table's statistics are taken (ANALYZE), as the package's bench does for its own
table before its drain. The clock runs from T until no job of the entrypoint is left in the queue table (an EXISTS
query every 50 ms), as scripts/postgres-bench.sh does for the package's own workers.
`--drain-start cold` instead enqueues the jobs due at once and starts the clock when the
worker processes are spawned (their interpreter start-up, imports and connect included).

The key mixes, the options of a point and the output's plumbing are peers_common.py's, beside
this file, shared with dbos_bench.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import asyncpg
import pgqueuer
from pgqueuer.db import AsyncpgDriver, AsyncpgPoolDriver
from pgqueuer.errors import DuplicateJobError
from pgqueuer.models import Job
from pgqueuer.qm import QueueManager
from pgqueuer.queries import Queries

# peers_common.py is beside this file: sys.path[0] when it runs as a script, from any folder.
from peers_common import HOT_KEYS, BenchError, database_url, emit, emit_submit, log, run_main
from peers_common import add_mix_arguments, add_size_arguments, check_point_arguments
from peers_common import key_for, per_producer_for, submit_points

CONTENDER = f"pgqueuer {pgqueuer.__version__}"
SUBMIT_ENTRYPOINT = "dpd_peers_submit"
DRAIN_ENTRYPOINT = "dpd_peers_drain"
CONNECT_TIMEOUT = 10.0
COMMAND_TIMEOUT = 120.0  # no statement of the bench takes near this: a stuck server fails


async def connect(url: str) -> asyncpg.Connection:
    try:
        return await asyncpg.connect(
            url, timeout=CONNECT_TIMEOUT, command_timeout=COMMAND_TIMEOUT
        )
    except Exception as error:  # unreachable, refused, bad credentials, timeout
        raise BenchError(f"cannot connect to the database: {error!r}") from error


def run_async(main) -> None:
    try:
        import uvloop  # a dependency of pgqueuer; its CLI runs on it too
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


# ---------------------------------------------------------------------------------------------
# schema


async def install_schema(url: str) -> None:
    """pgqueuer's own install, idempotently: install when absent, else converge (upgrade)."""
    connection = await connect(url)
    try:
        queries = Queries(AsyncpgDriver(connection))
        if await queries.schema_is_installed():
            plan = await queries.apply_upgrade()
            log(f"schema present; upgrade ran {len(plan.statements)} statement(s)")
        else:
            await queries.install()
            log("schema installed (durability: durable, pgqueuer's default)")
    finally:
        await connection.close()


async def clear(connection: asyncpg.Connection) -> None:
    queries = Queries(AsyncpgDriver(connection))
    await queries.clear_queue()  # TRUNCATE of the queue table
    await queries.clear_queue_log()  # and of the log that every enqueue writes to


# ---------------------------------------------------------------------------------------------
# submissions


async def submit_point(
    url: str,
    producers: int,
    per_producer: int,
    mix: str,
    max_connections: int,
    batch: int,
) -> tuple[float, int, int, int]:
    """Returns (submissions/s, calls, rejected duplicates, connections)."""
    connections = min(producers, max_connections)
    try:
        pool = await asyncpg.create_pool(
            url, min_size=connections, max_size=connections, timeout=CONNECT_TIMEOUT,
            command_timeout=COMMAND_TIMEOUT,
        )
    except Exception as error:
        raise BenchError(f"cannot open a pool of {connections}: {error!r}") from error
    run = f"r{os.getpid()}-{time.monotonic_ns()}"
    payload = b"1"
    later = timedelta(hours=1)
    rejected = 0
    try:
        queries = Queries(AsyncpgPoolDriver(pool))
        async with pool.acquire() as connection:
            await clear(connection)
        # Warm every pooled connection (asyncpg prepares the enqueue statement per connection).
        async def warm(index: int) -> None:
            async with pool.acquire() as connection:
                await Queries(AsyncpgDriver(connection)).enqueue(
                    SUBMIT_ENTRYPOINT, payload, 0, later, f"warm-{run}-{index}"
                )
        await asyncio.gather(*(warm(i) for i in range(connections)))
        async with pool.acquire() as connection:
            await clear(connection)

        async def one_by_one(producer: int) -> int:
            duplicates = 0
            for index in range(per_producer):
                try:
                    await queries.enqueue(
                        SUBMIT_ENTRYPOINT, payload, 0, later, key_for(run, mix, producer, index)
                    )
                except DuplicateJobError:
                    duplicates += 1
            return duplicates

        async def batched(producer: int) -> int:
            for start in range(0, per_producer, batch):
                count = min(batch, per_producer - start)
                await queries.enqueue(
                    [SUBMIT_ENTRYPOINT] * count,
                    [payload] * count,
                    [0] * count,
                    [later] * count,
                    [key_for(run, mix, producer, start + i) for i in range(count)],
                )
            return 0

        body = batched if batch > 1 else one_by_one
        started = time.perf_counter()
        results = await asyncio.gather(*(body(p) for p in range(producers)))
        elapsed = time.perf_counter() - started
        rejected = sum(results)

        calls = producers * per_producer
        async with pool.acquire() as connection:
            stored = await connection.fetchval(
                "SELECT count(*) FROM pgqueuer WHERE entrypoint = $1", SUBMIT_ENTRYPOINT
            )
            if stored + rejected != calls:
                raise BenchError(
                    f"{producers} producers, {mix}: {calls} calls but {stored} jobs stored"
                    f" and {rejected} rejected"
                )
            await clear(connection)
        return calls / elapsed, calls, rejected, connections
    finally:
        await pool.close()


def submit_note(mix: str, per_producer: int, connections: int, rejected: int, calls: int,
                batch: int) -> str:
    call = (
        f"Queries.enqueue with lists of {batch} jobs per call"
        if batch > 1
        else "one Queries.enqueue call per job"
    )
    note = (
        f"{call}, each with its own dedupe_key and execute_after 1 h (nothing due, no worker);"
        f" {per_producer} jobs per producer; asyncio tasks in one Python process (uvloop) over"
        f" an asyncpg pool of {connections} connection(s); each enqueue also inserts a"
        " pgqueuer_log row and fires the table's NOTIFY trigger; queue truncated between points"
    )
    if mix == "hot":
        note += (
            f"; hot mix: 1 call in 10 reuses one of {HOT_KEYS} hot keys, which pgqueuer"
            " rejects while a job with that key is queued or picked (DuplicateJobError,"
            " caught and counted as a handled call: first submission wins, later ones neither"
            f" move its due time nor replace its payload); {rejected} of {calls} calls rejected"
        )
    return note


# ---------------------------------------------------------------------------------------------
# drain


def worker_main(args: argparse.Namespace) -> None:
    """One worker process: a QueueManager whose entrypoint only counts; SIGTERM stops it."""
    ran = 0

    async def main() -> None:
        connection = await connect(database_url())
        manager = QueueManager(Queries(AsyncpgDriver(connection)))

        @manager.entrypoint(DRAIN_ENTRYPOINT)
        async def count(job: Job) -> None:
            nonlocal ran
            ran += 1

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, manager.shutdown.set)
        print("ready", flush=True)
        try:
            await manager.run(
                batch_size=args.batch_size,
                max_concurrent_tasks=args.max_concurrent or None,
            )
        finally:
            await connection.close()

    run_async(main())
    print(json.dumps({"ran": ran}), flush=True)


class Workers:
    """The worker processes: spawned, awaited ready, stopped with SIGTERM, counts collected."""

    def __init__(self, count: int, batch_size: int, max_concurrent: int) -> None:
        self.processes: list[subprocess.Popen] = []
        for _ in range(count):
            self.processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        os.path.abspath(__file__),
                        "--worker",
                        "--batch-size",
                        str(batch_size),
                        "--max-concurrent",
                        str(max_concurrent),
                    ],
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for process in self.processes:
            line = process.stdout.readline()  # blocks; a dead worker gives "" at once
            if line.strip() != "ready" or time.monotonic() > deadline:
                raise BenchError(f"worker {process.pid} did not start (said {line!r})")

    def check_alive(self) -> None:
        for process in self.processes:
            if process.poll() is not None:
                raise BenchError(f"worker {process.pid} exited with {process.returncode}")

    def stop(self) -> int:
        """SIGTERM each; returns the total of runs they report."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        total = 0
        for process in self.processes:
            try:
                out, _ = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                raise BenchError(f"worker {process.pid} did not stop within 30 s of SIGTERM")
            if process.returncode != 0:
                raise BenchError(f"worker {process.pid} exited with {process.returncode}")
            lines = [line for line in out.splitlines() if line.startswith("{")]
            if not lines:
                raise BenchError(f"worker {process.pid} reported no count")
            total += json.loads(lines[-1])["ran"]
        return total

    def kill(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()


async def enqueue_drain_jobs(
    connection: asyncpg.Connection, jobs: int, due_at: float | None, chunk: int = 5_000
) -> None:
    """Enqueues `jobs` jobs in batches; all due at the wall-clock instant `due_at` (or now)."""
    queries = Queries(AsyncpgDriver(connection))
    for start in range(0, jobs, chunk):
        count = min(chunk, jobs - start)
        after = None if due_at is None else timedelta(seconds=due_at - time.time())
        if after is not None and after <= timedelta(0):
            raise BenchError("enqueueing the drain jobs overran their due time")
        await queries.enqueue(
            [DRAIN_ENTRYPOINT] * count,
            [b"x"] * count,
            [0] * count,
            [after] * count,
            [f"d{start + i}" for i in range(count)],
        )


async def check_queued(connection: asyncpg.Connection, jobs: int) -> None:
    queued = await connection.fetchval(
        "SELECT count(*) FROM pgqueuer WHERE entrypoint = $1 AND status = 'queued'",
        DRAIN_ENTRYPOINT,
    )
    if queued != jobs:
        raise BenchError(f"{queued} of {jobs} drain jobs queued before the clock started")


async def any_left(connection: asyncpg.Connection) -> bool:
    return await connection.fetchval(
        "SELECT EXISTS (SELECT 1 FROM pgqueuer WHERE entrypoint = $1)", DRAIN_ENTRYPOINT
    )


async def drain(url: str, args: argparse.Namespace) -> tuple[float, int, float]:
    """Returns (runs/s, handler runs reported by the workers, seconds)."""
    connection = await connect(url)
    workers: Workers | None = None
    try:
        await clear(connection)
        if args.drain_start == "cold":
            log(f"enqueueing {args.drain_jobs} jobs due now")
            await enqueue_drain_jobs(connection, args.drain_jobs, None)
            await check_queued(connection, args.drain_jobs)
            if args.drain_statistics == "analyze":
                await connection.execute("ANALYZE pgqueuer")
            started = time.perf_counter()
            workers = Workers(args.drain_workers, args.drain_batch_size, args.drain_max_concurrent)
        else:
            workers = Workers(args.drain_workers, args.drain_batch_size, args.drain_max_concurrent)
            workers.wait_ready()
            await asyncio.sleep(1.0)  # let each QueueManager verify the schema and LISTEN
            # Time one batch, then place the due instant past the estimated end of the rest.
            probe = time.perf_counter()
            await enqueue_drain_jobs(connection, 5_000, time.time() + 600, chunk=5_000)
            per_batch = time.perf_counter() - probe
            await clear(connection)
            estimate = per_batch * (args.drain_jobs / 5_000)
            # One more second for the statistics taken after the jobs are in.
            due_at = time.time() + 1.5 * estimate + 2.0
            log(f"enqueueing {args.drain_jobs} jobs, all due in {due_at - time.time():.1f} s")
            await enqueue_drain_jobs(connection, args.drain_jobs, due_at)
            await check_queued(connection, args.drain_jobs)
            # The same conditions as the package's drain, whose bench takes statistics of its
            # table once the rows are in: the planner then knows the queue's size.
            # `--drain-statistics none` leaves them to autovacuum, as before issue 42.
            if args.drain_statistics == "analyze":
                await connection.execute("ANALYZE pgqueuer")
            if time.time() > due_at - 0.1:
                raise BenchError("enqueueing the drain jobs took longer than planned")
            workers.check_alive()
            await asyncio.sleep(max(0.0, due_at - time.time()))
            started = time.perf_counter()
        limit = started + args.drain_timeout
        while await any_left(connection):
            if time.perf_counter() > limit:
                raise BenchError(f"the queue was not empty after {args.drain_timeout} s")
            workers.check_alive()
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - started
        # When the table's statistics were last taken, against the due instant (both read on
        # the server's clock): a plan made on the statistics of an empty table is the slow one.
        taken = await connection.fetchrow(
            "SELECT extract(epoch FROM clock_timestamp() - last_analyze)::float8 AS analyze_ago,"
            " extract(epoch FROM clock_timestamp() - last_autoanalyze)::float8"
            " AS autoanalyze_ago, autoanalyze_count"
            " FROM pg_stat_user_tables WHERE relname = 'pgqueuer'"
        )
        since_due = time.perf_counter() - started
        if taken is not None:
            def before_due(ago):
                # positive: before the due instant T; negative: during the drain
                return "never" if ago is None else f"{ago - since_due:+.1f} s before T"
            log(f"statistics of pgqueuer: ANALYZE {before_due(taken['analyze_ago'])},"
                f" autoanalyze {before_due(taken['autoanalyze_ago'])}"
                f" ({taken['autoanalyze_count']} in all); drain {elapsed:.2f} s")
        ran = workers.stop()
        workers = None
        successful = await connection.fetchval(
            "SELECT count(*) FROM pgqueuer_log WHERE entrypoint = $1 AND status = 'successful'",
            DRAIN_ENTRYPOINT,
        )
        if successful != args.drain_jobs or ran < args.drain_jobs:
            raise BenchError(
                f"queue empty, but {successful} successful log rows and {ran} handler runs"
                f" for {args.drain_jobs} jobs"
            )
        await clear(connection)
        return args.drain_jobs / elapsed, ran, elapsed
    finally:
        if workers is not None:
            workers.kill()
        await connection.close()


# ---------------------------------------------------------------------------------------------


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_size_arguments(parser, unit="jobs", calls_per_point=10_000,
                       calls_per_point_help="total calls per point when --per-producer is not"
                                            " given")
    add_mix_arguments(parser, max_connections_help="pool size cap: the pool has min(P, this)"
                                                    " connections")
    parser.add_argument("--batched-size", type=int, default=100,
                        help="jobs per enqueue call in the batched point (0: skip it)")
    parser.add_argument("--batched-producers", type=int, default=8)
    parser.add_argument("--drain-jobs", type=int, default=100_000)
    parser.add_argument("--drain-workers", type=int, default=3)
    parser.add_argument("--drain-batch-size", type=int, default=16,
                        help="QueueManager.run batch_size (default 16, the most that"
                             " max_concurrent_tasks 32 allows; pgqueuer's own default is 10)")
    parser.add_argument("--drain-max-concurrent", type=int, default=32,
                        help="QueueManager.run max_concurrent_tasks (default 32, as the"
                             " package's workers in scripts/postgres-bench.sh; 0: unlimited,"
                             " pgqueuer's default)")
    parser.add_argument("--drain-start", choices=("warm", "cold"), default="warm")
    parser.add_argument("--drain-statistics", choices=("analyze", "none"), default="analyze",
                        help="analyze: ANALYZE the queue table once the jobs are in (default,"
                             " as the package's drain); none: leave it to autovacuum")
    parser.add_argument("--drain-timeout", type=float, default=180.0)
    parser.add_argument("--skip-submit", action="store_true")
    parser.add_argument("--skip-drain", action="store_true")
    # internal: a drain worker process
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", type=int, default=10, help=argparse.SUPPRESS)
    parser.add_argument("--max-concurrent", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    check_point_arguments(parser, args)
    if args.drain_max_concurrent and args.drain_max_concurrent < 2 * args.drain_batch_size:
        parser.error("pgqueuer needs --drain-max-concurrent >= 2 x --drain-batch-size")
    return args


async def bench(args: argparse.Namespace) -> None:
    url = database_url()
    await install_schema(url)
    if not args.skip_submit:
        for producers, per_producer, mix in submit_points(args):
            log(f"submit: {producers} producers x {per_producer}, {mix}")
            rate, calls, rejected, connections = await submit_point(
                url, producers, per_producer, mix, args.max_connections, 1
            )
            emit_submit(CONTENDER, mix, producers, rate,
                        submit_note(mix, per_producer, connections, rejected, calls, 1))
        if args.batched_size > 1:
            producers = args.batched_producers
            per_producer = max(
                args.batched_size,
                -(-(per_producer_for(args, producers) * 5) // args.batched_size)
                * args.batched_size,
            )
            log(f"submit, batched: {producers} producers x {per_producer} in lists of"
                f" {args.batched_size}")
            rate, calls, _, connections = await submit_point(
                url, producers, per_producer, "distinct", args.max_connections, args.batched_size
            )
            emit({
                "contender": CONTENDER, "figure": "submit_batched", "mix": "distinct",
                "producers": producers, "batch": args.batched_size, "value": round(rate, 1),
                "unit": "/s",
                "note": submit_note("distinct", per_producer, connections, 0, calls,
                                    args.batched_size)
                + "; jobs per second, not calls: NOT comparable with one delay per call",
            })
    if not args.skip_drain:
        log(f"drain: {args.drain_jobs} jobs, {args.drain_workers} worker processes,"
            f" batch_size {args.drain_batch_size}, start {args.drain_start}")
        rate, ran, elapsed = await drain(url, args)
        cap = (f"max_concurrent_tasks {args.drain_max_concurrent}" if args.drain_max_concurrent
               else "max_concurrent_tasks unlimited (pgqueuer's default)")
        if args.drain_start == "warm":
            analyzed = ("ANALYZE before it" if args.drain_statistics == "analyze"
                        else "statistics left to autovacuum")
            timing = (f"workers started and idle first; all jobs due at one instant T, {analyzed};"
                      " clock from T until no job is left in the queue table (EXISTS every 50 ms)")
        else:
            timing = ("jobs due before the workers exist; clock from spawning the processes"
                      " (start-up included) until no job is left (EXISTS every 50 ms)")
        emit({
            "contender": CONTENDER, "figure": "drain", "workers": args.drain_workers,
            "jobs": args.drain_jobs, "value": round(rate, 1), "unit": "runs/s",
            "note": (f"{args.drain_workers} QueueManager processes, one asyncpg connection each,"
                     f" batch_size {args.drain_batch_size}, {cap}, no-op entrypoint; {timing};"
                     f" {elapsed:.2f} s, {ran} handler runs, every job logged successful"),
        })


def main() -> int:
    args = parse_arguments()
    if args.worker:
        return run_main(lambda: worker_main(args))
    return run_main(lambda: run_async(bench(args)))


if __name__ == "__main__":
    sys.exit(main())
