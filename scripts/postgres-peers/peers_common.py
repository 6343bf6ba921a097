"""What the PostgreSQL peers' benchmarks (pgqueuer_bench.py, dbos_bench.py) have in common.

Not a script: each benchmark imports it from its own folder (on sys.path when it runs as a
script). It holds the parts that must stay the same across the peers for their figures to be
comparable, and the plumbing around them:

- the error type of a failed step, the stderr progress line (`<script>: message`), one JSON
  line per figure on stdout, and the exit status of a run (`run_main`);
- the server's URL from DPD_POSTGRES_URL;
- the command-line options of a submission point (--producers, --per-producer,
  --calls-per-point, --mixes, --max-connections), their checks, and the calls each producer
  makes at a point;
- the key mixes: "distinct" (every key new) and "hot" (per producer, 9 calls in 10 use a new
  key and 1 in 10 one of HOT_KEYS hot keys);
- the record of a "submit" figure.

Only the standard library: the peers' own packages stay in their scripts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, Iterator

HOT_KEYS = 100
MIXES = ("distinct", "hot")

# The script that runs, as its progress lines name it ("pgqueuer_bench", "dbos_bench").
PROGRAM = os.path.splitext(os.path.basename(sys.argv[0] or "peers"))[0]


class BenchError(Exception):
    """A step failed: reported on stderr, exit status 1, no figure printed for it."""


def log(message: str) -> None:
    print(f"{PROGRAM}: {message}", file=sys.stderr, flush=True)


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def emit_submit(contender: str, mix: str, producers: int, rate: float, note: str) -> None:
    """One "submit" figure: submissions/s of `producers` producers on the `mix` key mix."""
    emit({
        "contender": contender, "figure": "submit", "mix": mix,
        "producers": producers, "value": round(rate, 1), "unit": "/s",
        "note": note,
    })


def database_url() -> str:
    url = os.environ.get("DPD_POSTGRES_URL", "")
    if not url:
        raise BenchError("set DPD_POSTGRES_URL (scripts/postgres.sh start prints one)")
    return url


def run_main(body: Callable[[], None]) -> int:
    """Runs body(); returns the exit status, logging a failure or an interrupt on stderr."""
    try:
        body()
    except BenchError as error:
        log(f"failed: {error}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    except Exception as error:
        log(f"failed: {error!r}")
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# points and keys


def key_for(run: str, mix: str, producer: int, index: int) -> str:
    """The key of a producer's index-th call in a point of the run `run`."""
    if mix == "hot" and index % 10 == 9:
        return f"hot-{(producer * 7 + index // 10) % HOT_KEYS}"
    return f"{run}-p{producer}-{index}"


def per_producer_for(args: argparse.Namespace, producers: int) -> int:
    """--per-producer, or --calls-per-point / P rounded up to a multiple of 10 (10 at least)."""
    if args.per_producer is not None:
        return args.per_producer
    share = -(-args.calls_per_point // producers)
    return max(10, -(-share // 10) * 10)


def submit_points(args: argparse.Namespace) -> Iterator[tuple[int, int, str]]:
    """(producers, calls per producer, mix) of each point, mixes within producer counts."""
    for producers in args.producer_counts:
        per_producer = per_producer_for(args, producers)
        for mix in args.mix_list:
            yield producers, per_producer, mix


# ---------------------------------------------------------------------------------------------
# command line: the options of the submission points, in two parts so that a script may put
# its own between them; check_point_arguments after parse_args.


def add_size_arguments(parser: argparse.ArgumentParser, *, unit: str, calls_per_point: int,
                       calls_per_point_help: str | None = None) -> None:
    """--producers, --per-producer (`unit`: what a producer makes) and --calls-per-point."""
    parser.add_argument("--producers", default="1,8,64,256",
                        help="producer counts, comma-separated (default 1,8,64,256)")
    parser.add_argument("--per-producer", type=int, default=None,
                        help=f"{unit} per producer at every point (default: --calls-per-point"
                             " / P, rounded up to a multiple of 10)")
    parser.add_argument("--calls-per-point", type=int, default=calls_per_point,
                        help=calls_per_point_help)


def add_mix_arguments(parser: argparse.ArgumentParser, *, max_connections_help: str) -> None:
    """--mixes and --max-connections."""
    parser.add_argument("--mixes", default=",".join(MIXES), help=",".join(MIXES))
    parser.add_argument("--max-connections", type=int, default=64, help=max_connections_help)


def check_point_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Sets args.producer_counts and args.mix_list; exits through parser.error when off."""
    try:
        args.producer_counts = [int(p) for p in args.producers.split(",") if p.strip()]
    except ValueError:
        parser.error("--producers takes integers, comma-separated")
    args.mix_list = [m.strip() for m in args.mixes.split(",") if m.strip()]
    if any(m not in MIXES for m in args.mix_list):
        parser.error("--mixes takes distinct and/or hot")
    if any(p < 1 for p in args.producer_counts) or args.max_connections < 1:
        parser.error("producer counts and --max-connections must be positive")
