#!/usr/bin/env python3
"""Compiles every Swift snippet of the README and the DocC articles, so that they cannot rot.

    python3 scripts/check-snippets.py

What it checks: every fenced code block whose info string is `swift`, in `README.md` and in
`Sources/DelayedPreemptiveDispatch/DelayedPreemptiveDispatch.docc/*.md`.

How: each snippet becomes one Swift file of a throwaway SwiftPM package in `.build-snippets/`
(git-ignored). That package depends on the root package by path and uses its library products
`DelayedPreemptiveDispatch` and `DelayedPreemptiveDispatchTesting`; one `swift build` compiles
every snippet at once. A snippet sees only the imports it writes itself (the package enables
`MemberImportVisibility`), so a snippet that forgets `import DelayedPreemptiveDispatch` fails.

- A snippet with statements (`let`, calls, `await`) is compiled as the body of an `async throws`
  function of its own, so its names never clash with another snippet's. Its `import` lines move
  to the top of the file.
- A snippet that declares a `@Test` or a type at its top level is compiled at file scope.
- The names a snippet takes from its surroundings (`document`, `keypad`, `search`, ...) are stub
  declarations in `scripts/snippets/Prelude.swift`. Add one there when a new snippet needs it;
  keep the stubs shaped like what the text says they are (a `@MainActor` view, an `async` load).

Diagnostics point at the Markdown file and line (through `#sourceLocation`), and the script fails
with the list of broken snippets.

Skipping a snippet: put the HTML comment `<!-- snippet: skip -->` (or `<!-- snippet: skip
(the reason) -->`) on the line right before its opening fence. GitHub and DocC render neither the comment nor anything else differently. Keep
such exceptions rare: a `Package.swift` excerpt, or an example that needs a package this one does
not depend on (swift-service-lifecycle, or the Postgres package, whose own tests make the same
calls).

All snippets are compiled in one build, so one run reports every broken snippet. `-v` prints
the build log on success too. A cold run builds the library once more inside `.build-snippets/`
(10 to 30 s on 2 cores); a warm run recompiles only the snippets that changed.

    python3 scripts/check-snippets.py --postgres

The Postgres mode compiles the snippets that need the Postgres package: every Swift snippet of
`Postgres/Sources/DelayedPreemptiveDispatchPostgres/DelayedPreemptiveDispatchPostgres.docc/*.md`
and of the doc comments (`///`) of `Postgres/Sources/DelayedPreemptiveDispatchPostgres/**/*.swift`
that is not marked skip (in a doc comment, the marker is a `///` line of its own before the
fence; a doc comment's snippet is compiled with the imports its module's sources have:
DelayedPreemptiveDispatch, DelayedPreemptiveDispatchPostgres, Foundation, Logging, PostgresNIO,
ServiceLifecycle), and the snippets of the README and of the root DocC articles whose skip
marker says `(needs the Postgres package`. A marker that names the operations branch skips a
snippet in both modes: it needs API that has not landed. The stubs are in
`scripts/snippets/PostgresPrelude.swift`. Rather than build PostgresNIO and its dependencies
once more (minutes on 2 cores), it type-checks the snippets with `swiftc` against the modules
of the package's regular build in `Postgres/.build`, with the module search paths of that build
and the flags that `.ci/run` and `scripts/build-docs-postgres.sh` build it with, so run that
script (or .ci/run's Postgres build) first. It builds `MetricsTestKit`, a dependency of the
tests, with the same flags, for the snippets that test metrics: a no-op after a build of the
tests.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRELUDE = ROOT / "scripts" / "snippets" / "Prelude.swift"
WORK = ROOT / ".build-snippets"
SOURCES = [ROOT / "README.md"] + sorted(
    (ROOT / "Sources" / "DelayedPreemptiveDispatch" / "DelayedPreemptiveDispatch.docc").glob("*.md")
)
POSTGRES_CATALOG = (
    ROOT / "Postgres" / "Sources" / "DelayedPreemptiveDispatchPostgres"
    / "DelayedPreemptiveDispatchPostgres.docc"
)
# The Swift files whose doc comments' snippets the Postgres mode compiles, as it does the
# articles': the library's public API, where DocC renders them.
POSTGRES_DOC_COMMENTS = sorted(
    (ROOT / "Postgres" / "Sources" / "DelayedPreemptiveDispatchPostgres").rglob("*.swift")
)
DOC_COMMENT_IMPORTS = ["DelayedPreemptiveDispatch", "DelayedPreemptiveDispatchPostgres", "Foundation",
                       "Logging", "PostgresNIO", "ServiceLifecycle"]
POSTGRES_PRELUDE = ROOT / "scripts" / "snippets" / "PostgresPrelude.swift"
POSTGRES_BUILD = ROOT / "Postgres" / ".build"
# The flags of .ci/run's Postgres build and of scripts/build-docs-postgres.sh, so that nothing
# is compiled again.
POSTGRES_FLAGS = ["-Xswiftc", "-warnings-as-errors"]
POSTGRES_WORK = ROOT / "Postgres" / ".build" / "snippets"
SKIP_MARKER = "<!-- snippet: skip"  # optionally followed by the reason, then "-->"
POSTGRES_REASON = "(needs the Postgres package"  # a skip reason that the Postgres mode compiles
PENDING_REASON = "operations branch"  # a skip reason that needs API not landed yet
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<info>.*)$")
FILE_SCOPE = re.compile(r"^(@Test\b|@Suite\b|(public\s+|final\s+)*(struct|class|enum|actor|extension|protocol)\s)")
IMPORT = re.compile(r"^(@\w+\s+)*import\s+\w")


@dataclass
class Snippet:
    path: Path
    line: int  # 1-based line of the first line of code (after the opening fence)
    lines: list[str]
    skip: str | None = None  # the skip marker before the snippet, if any

    @property
    def name(self) -> str:
        stem = re.sub(r"\W", "_", self.path.stem)
        return f"{stem}_L{self.line}"


def extract(path: Path) -> tuple[list[Snippet], int]:
    """Returns the Swift snippets of one Markdown file, and how many were marked to skip."""
    snippets, skipped = [], 0
    for snippet in extract_all(path):
        if snippet.skip is None:
            snippets.append(snippet)
        else:
            skipped += 1
    return snippets, skipped


DOC_COMMENT = re.compile(r"^\s*/// ?(?P<text>.*)$")


def doc_comment_lines(path: Path) -> list[str]:
    """The doc comments of a Swift file as Markdown, line for line: each `///` line without its
    slashes, every other line blank, so that a snippet keeps the line number it has in the
    Swift file."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = DOC_COMMENT.match(line)
        lines.append(match["text"] if match else "")
    return lines


def extract_all(path: Path) -> list[Snippet]:
    """Returns every Swift snippet of one Markdown file, or of the doc comments of one Swift
    file, with its skip marker if it has one."""
    snippets: list[Snippet] = []
    if path.suffix == ".swift":
        lines = doc_comment_lines(path)
    else:
        lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    previous = ""
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            if lines[index].strip():
                previous = lines[index].strip()
            index += 1
            continue
        indent, fence, info = match["indent"], match["fence"], match["info"].strip()
        body: list[str] = []
        start = index + 2
        index += 1
        while index < len(lines):
            closing = lines[index].strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                break
            text = lines[index]
            body.append(text[len(indent):] if text.startswith(indent) else text.lstrip())
            index += 1
        index += 1
        language = info.split()[0] if info else ""
        if language == "swift":
            marked = previous.startswith(SKIP_MARKER) and previous.endswith("-->")
            snippets.append(Snippet(path, start, body, previous if marked else None))
        previous = ""
    return snippets


def render(snippet: Snippet) -> str:
    """One Swift file for one snippet; `#sourceLocation` maps every line back to the Markdown."""
    where = str(snippet.path)
    at = lambda line: f'#sourceLocation(file: "{where}", line: {line})'
    code = [line.rstrip() for line in snippet.lines]
    out = [f"// {snippet.path.relative_to(ROOT)}, line {snippet.line}. Generated; do not edit."]
    if snippet.path.suffix == ".swift":
        # A doc comment is read where its symbol is: with the imports of the module's sources.
        out += [f"import {module}" for module in DOC_COMMENT_IMPORTS]
    header = len(out)
    if any(FILE_SCOPE.match(line) for line in code):
        out += [at(snippet.line)] + code + ["#sourceLocation()"]
        return "\n".join(out) + "\n"
    body: list[str] = []
    for offset, line in enumerate(code):
        if IMPORT.match(line):
            out += [at(snippet.line + offset), line]
            body.append("")
        else:
            body.append(line)
    if len(out) > header:
        out.append("#sourceLocation()")
    out += [
        f"func snippet_{snippet.name}() async throws {{",
        at(snippet.line),
    ]
    out += ["  " + line if line else "" for line in body]
    out += ["#sourceLocation()", "}"]
    return "\n".join(out) + "\n"


def manifest() -> str:
    # With a path dependency SwiftPM names the package after its folder, not its manifest.
    package = ROOT.name
    return f"""// swift-tools-version: 6.1
// Generated by scripts/check-snippets.py; do not edit.
import PackageDescription

let package = Package(
  name: "Snippets",
  platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
  dependencies: [.package(path: "{ROOT}")],
  targets: [
    .target(
      name: "Snippets",
      dependencies: [
        .product(name: "DelayedPreemptiveDispatch", package: "{package}"),
        .product(name: "DelayedPreemptiveDispatchTesting", package: "{package}"),
      ],
      swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
    )
  ],
  swiftLanguageModes: [.v6]
)
"""


def write_if_changed(path: Path, text: str) -> None:
    """Rewrites only what changed, so that a warm build recompiles little."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def sync_sources(sources: Path, wanted: dict[str, str]) -> None:
    """Makes `sources` hold exactly the `wanted` Swift files, rewriting only those that changed,
    so that the compiler's incremental build sees only real changes."""
    if sources.exists():
        for stale in sources.glob("*.swift"):
            if stale.name not in wanted:
                stale.unlink()
    for name, text in wanted.items():
        write_if_changed(sources / name, text)


def postgres_snippets() -> tuple[list[Snippet], int]:
    """The snippets that the Postgres mode compiles, and how many it skips."""
    snippets: list[Snippet] = []
    skipped = 0
    for source in sorted(POSTGRES_CATALOG.glob("*.md")) + POSTGRES_DOC_COMMENTS + SOURCES:
        in_catalog = source.parent == POSTGRES_CATALOG or source.suffix == ".swift"
        for snippet in extract_all(source):
            marker = snippet.skip or ""
            if PENDING_REASON in marker:
                skipped += 1
            elif (in_catalog and not marker) or POSTGRES_REASON in marker:
                snippets.append(snippet)
            elif in_catalog:
                skipped += 1
    return snippets, skipped


def postgres_flags() -> list[str]:
    """The `swiftc` flags that find the modules of the Postgres build: the ones SwiftPM gave
    the module DelayedPreemptiveDispatchPostgres itself (module and header search paths, module
    maps of the C targets), read from that build's manifest."""
    build = ["swift", "build", "--package-path", str(ROOT / "Postgres")]
    manifest = POSTGRES_BUILD / "debug.yaml"
    if not manifest.exists():
        sys.exit("error: no Postgres build; run scripts/build-docs-postgres.sh first")
    # MetricsTestKit, with the flags of that build so that nothing else is rebuilt.
    result = subprocess.run(
        build + ["--target", "MetricsTestKit"] + POSTGRES_FLAGS,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    if result.returncode != 0:
        print(result.stdout, file=sys.stderr)
        sys.exit("error: could not build MetricsTestKit in the Postgres build")
    bin_path = subprocess.run(
        build + ["--show-bin-path"] + POSTGRES_FLAGS, stdout=subprocess.PIPE, text=True, check=True
    ).stdout.strip()
    module = "DelayedPreemptiveDispatchPostgres"
    flags: list[str] = ["-I", str(Path(bin_path) / "Modules")]
    for line in manifest.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line.startswith("args: [") or f'"-module-name","{module}"' not in line.replace(" ", ""):
            continue
        args = [arg.strip().strip('"') for arg in line[len("args: ["):-1].split('","')]
        index = 0
        while index < len(args):
            arg = args[index]
            if arg in ("-I", "-Xcc") and index + 1 < len(args):
                flags += [arg, args[index + 1]]
                index += 2
                continue
            if arg.startswith("-I"):
                flags.append(arg)
            index += 1
        break
    else:
        sys.exit(f"error: the Postgres build has no command for {module}; rerun it")
    return flags


def main_postgres(verbose: bool) -> int:
    snippets, skipped = postgres_snippets()
    flags = postgres_flags()
    sources = POSTGRES_WORK / "Sources"
    wanted = {"Prelude.swift": POSTGRES_PRELUDE.read_text(encoding="utf-8")}
    for snippet in snippets:
        wanted[f"{snippet.name}.swift"] = render(snippet)
    sync_sources(sources, wanted)

    print(f"Type-checking {len(snippets)} Postgres Swift snippets ({skipped} skipped) against "
          f"{POSTGRES_BUILD.relative_to(ROOT)}")
    command = [
        "swiftc", "-typecheck", "-continue-building-after-errors", "-parse-as-library", "-swift-version", "6",
        "-module-name", "PostgresSnippets", "-enable-upcoming-feature", "MemberImportVisibility",
    ] + flags + [str(sources / name) for name in sorted(wanted)]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return report(result, snippets, verbose)


def main() -> int:
    verbose = "-v" in sys.argv[1:]
    if "--postgres" in sys.argv[1:]:
        return main_postgres(verbose)
    snippets: list[Snippet] = []
    skipped = 0
    for source in SOURCES:
        found, skips = extract(source)
        snippets += found
        skipped += skips

    sources = WORK / "Sources" / "Snippets"
    wanted = {"Prelude.swift": PRELUDE.read_text(encoding="utf-8")}
    for snippet in snippets:
        wanted[f"{snippet.name}.swift"] = render(snippet)
    write_if_changed(WORK / "Package.swift", manifest())
    sync_sources(sources, wanted)

    print(f"Compiling {len(snippets)} Swift snippets ({skipped} marked skip) in {WORK.relative_to(ROOT)}")
    result = subprocess.run(
        ["swift", "build", "--package-path", str(WORK)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return report(result, snippets, verbose)


def report(result: subprocess.CompletedProcess[str], snippets: list[Snippet], verbose: bool) -> int:
    """Prints the outcome of a build of `snippets`; returns the exit code."""
    log = result.stdout
    markdown = {str(snippet.path) for snippet in snippets}
    errors = [
        line
        for line in log.splitlines()
        if ": error:" in line and line.split(":", 1)[0] in markdown
    ]
    if result.returncode == 0 and not errors:
        if verbose:
            print(log)
        print(f"All {len(snippets)} snippets compile.")
        return 0

    # The log without its progress lines ("[12/47] Compiling ..."): the diagnostics remain.
    progress = re.compile(r"^\[\d+/\d+\] ")
    print("\n".join(line for line in log.splitlines() if not progress.match(line)), file=sys.stderr)
    broken = sorted({tuple(line.split(":", 2)[:2]) for line in errors}, key=lambda p: (p[0], int(p[1])))
    print("error: Swift snippets that do not compile:", file=sys.stderr)
    for file, line in broken:
        owner = next(
            (s for s in snippets if str(s.path) == file and s.line <= int(line) < s.line + len(s.lines)),
            None,
        )
        start = f" (snippet at line {owner.line})" if owner else ""
        print(f"  {os.path.relpath(file, ROOT)}:{line}{start}", file=sys.stderr)
    if not broken:
        print("  (the build failed outside the snippets: see the log above)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
