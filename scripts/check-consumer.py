#!/usr/bin/env python3
"""Builds a service's package made outside the repository exactly as the PostgreSQL package's
Getting Started article says, so that the way it tells a service to depend on the package cannot
rot.

    python3 scripts/check-consumer.py                 # build it
    python3 scripts/check-consumer.py --run URL       # build it, then run it against URL
    python3 scripts/check-consumer.py --keep          # leave the folder for a look

What it reads, from
`Postgres/Sources/DelayedPreemptiveDispatchPostgres/DelayedPreemptiveDispatchPostgres.docc/GettingStarted.md`:
the `sh` block after `<!-- consumer: commands -->`, and every `swift` block whose skip marker
says `(consumer: PATH;`, which becomes the file PATH of the service's package.

What it does: makes a git repository in a fresh folder under `$TMPDIR` (never inside this
repository, and with none of its build products), runs the article's commands there, with the
URL of this repository in place of the article's `https://github.com/OWNER/...` (this
repository's committed HEAD: commit first) and `-c protocol.file.allow=always` so that git takes
a local path as a submodule's URL, writes the files, and runs `swift build` in it. It prints how
long the build took. With `--run URL`, it then starts the built service with `DATABASE_URL` set
to a database made for it on the server of URL (never migrated), waits until its worker has
migrated the schema and started, then runs the `sql` block after `<!-- consumer: sql -->` in
`WorkThatCommitsWithYourData.md` (the `documents` table and its `dpd_delay` trigger) in that
database, inserts a document and updates it at once, and expects the service's handler to log
one run with the document's newest text (the trigger's value decodes as the service's `Edit`,
and the two submissions were one burst). Then it stops the service with SIGTERM, and expects it
to exit 0 within 60 s.
"""

from __future__ import annotations

import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARTICLE = (
    ROOT / "Postgres" / "Sources" / "DelayedPreemptiveDispatchPostgres"
    / "DelayedPreemptiveDispatchPostgres.docc" / "GettingStarted.md"
)
TRIGGER_ARTICLE = ARTICLE.parent / "WorkThatCommitsWithYourData.md"
COMMANDS_MARKER = "<!-- consumer: commands -->"
SQL_MARKER = "<!-- consumer: sql -->"
FILE_MARKER = re.compile(r"<!-- snippet: skip \(consumer: (?P<path>[^;]+);.*-->")
FENCE = re.compile(r"^```(?P<info>\w*)\s*$")
REPOSITORY_URL = re.compile(r"https://github\.com/OWNER/DelayedPreemptiveDispatch\.git")


def blocks(text: str) -> tuple[list[str], dict[str, str]]:
    """The article's commands, and its files by path (the block after the SQL marker under the
    path `sql`)."""
    commands: list[str] = []
    files: dict[str, str] = {}
    lines = text.splitlines()
    index = 0
    previous = ""
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match or not match["info"]:
            if lines[index].strip():
                previous = lines[index].strip()
            index += 1
            continue
        body: list[str] = []
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            body.append(lines[index])
            index += 1
        index += 1
        if previous == COMMANDS_MARKER:
            commands += [line for line in body if line.strip()]
        elif previous == SQL_MARKER:
            files["sql"] = "\n".join(body) + "\n"
        elif marker := FILE_MARKER.match(previous):
            files[marker["path"].strip()] = "\n".join(body) + "\n"
        previous = ""
    return commands, files


def run(command: list[str], cwd: Path, **kwargs) -> None:
    print("$ " + " ".join(command), flush=True)
    subprocess.run(command, cwd=cwd, check=True, **kwargs)


def local(command: str) -> list[str]:
    """One of the article's commands, for this repository in place of its URL."""
    words = shlex.split(command)
    words = [REPOSITORY_URL.sub(str(ROOT), word) for word in words]
    if words[:3] == ["git", "submodule", "add"]:
        words = ["git", "-c", "protocol.file.allow=always"] + words[1:]
    return words


def psql(url: str, sql: str) -> None:
    subprocess.run(["psql", url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True)


def wait_for(log: Path, text: str, seconds: float, service: subprocess.Popen) -> bool:
    """Whether `text` appears in the service's log within `seconds`, while it runs."""
    deadline = time.monotonic() + seconds
    while text not in log.read_text() and time.monotonic() < deadline:
        if service.poll() is not None:
            break
        time.sleep(0.1)
    return text in log.read_text()


def check_trigger(url: str, sql: str, log: Path, service: subprocess.Popen) -> None:
    """Installs the article's trigger, inserts and updates a document in one go, and expects
    one run of the service's handler with the newest text."""
    subprocess.run(
        ["psql", url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"], input=sql.encode(),
        check=True,
    )
    psql(
        url,
        "INSERT INTO documents (id, body) VALUES (42, 'first draft'); "
        "UPDATE documents SET body = 'second draft' WHERE id = 42;",
    )
    # The trigger's delay is 2 s; the run and its log line follow.
    expected = "reindexing 42: second draft (fence "
    if not wait_for(log, expected, 30, service):
        service.kill()
        sys.exit(f"error: the trigger's submission did not run as an Edit:\n{log.read_text()}")
    time.sleep(1)
    text = log.read_text()
    if text.count("reindexing 42:") != 1 or "first draft" in text or "does not decode" in text:
        service.kill()
        sys.exit(f"error: the trigger's two submissions were not one run of the newest text:\n{text}")
    print("The article's trigger submitted an Edit that the service ran once, with the newest text.")


def run_service(folder: Path, server_url: str, sql: str) -> None:
    """Runs the built service against a fresh database; raises if it does not start and stop."""
    database = "dpd_consumer_" + uuid.uuid4().hex[:8]
    psql(server_url, f"CREATE DATABASE {database}")
    try:
        url = server_url[: server_url.rfind("/")] + "/" + database
        binary = folder / ".build" / "debug" / "ReindexService"
        log = folder / "service.log"
        with open(log, "w") as output:
            service = subprocess.Popen(
                [str(binary)], cwd=folder, stdout=output, stderr=subprocess.STDOUT,
                env=dict(os.environ, DATABASE_URL=url),
            )
        if not wait_for(log, "worker started", 60, service):
            service.kill()
            sys.exit(f"error: the service did not start its worker:\n{log.read_text()}")
        check_trigger(url, sql, log, service)
        service.send_signal(signal.SIGTERM)
        status = service.wait(timeout=60)
        text = log.read_text()
        print(text, end="")
        if status != 0 or "worker stopped" not in text:
            sys.exit(f"error: the service exited with {status} after SIGTERM")
        if "schema ready" not in text or "hasn't been called" in text:
            sys.exit("error: the worker did not migrate, or postgres-nio warned of an early lease")
        print("The service migrated a fresh database, worked, and stopped on SIGTERM.")
    finally:
        psql(server_url, f"DROP DATABASE {database} WITH (FORCE)")


def main() -> int:
    arguments = sys.argv[1:]
    keep = "--keep" in arguments
    server_url = arguments[arguments.index("--run") + 1] if "--run" in arguments else None
    commands, files = blocks(ARTICLE.read_text(encoding="utf-8"))
    if not commands or "Package.swift" not in files or len(files) < 2:
        sys.exit(f"error: {ARTICLE.name} lost its consumer markers (commands, Package.swift, a source)")
    sql = blocks(TRIGGER_ARTICLE.read_text(encoding="utf-8"))[1].get("sql")
    if not sql or "dpd_delay" not in sql:
        sys.exit(f"error: {TRIGGER_ARTICLE.name} lost its consumer marker (the trigger's sql block)")
    folder = Path(tempfile.mkdtemp(prefix="dpd-consumer-"))
    if ROOT in folder.parents:
        sys.exit(f"error: {folder} is inside the repository; set TMPDIR elsewhere")
    try:
        service = folder / "ReindexService"
        service.mkdir()
        run(["git", "init", "-q"], service)
        run(["git", "config", "user.email", "ci@localhost"], service)
        run(["git", "config", "user.name", "check-consumer"], service)
        for path, text in files.items():
            (service / path).parent.mkdir(parents=True, exist_ok=True)
            (service / path).write_text(text, encoding="utf-8")
        run(["git", "add", "."], service)
        for command in commands:
            run(local(command), service)
        start = time.monotonic()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        run(["swift", "build"], service)
        seconds = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        print(
            f"The consumer package built in {seconds:.0f} s wall and {cpu:.0f} s of CPU (user and "
            f"system time of the build's processes; from nothing: no build products reused), on "
            f"{os.cpu_count()} cores at load {os.getloadavg()[0]:.1f}."
        )
        if server_url:
            run_service(service, server_url, sql)
    finally:
        if keep:
            print(f"Kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
