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
SKIP_MARKER = "<!-- snippet: skip"  # optionally followed by the reason, then "-->"
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<info>.*)$")
FILE_SCOPE = re.compile(r"^(@Test\b|@Suite\b|(public\s+|final\s+)*(struct|class|enum|actor|extension|protocol)\s)")
IMPORT = re.compile(r"^(@\w+\s+)*import\s+\w")


@dataclass
class Snippet:
    path: Path
    line: int  # 1-based line of the first line of code (after the opening fence)
    lines: list[str]

    @property
    def name(self) -> str:
        stem = re.sub(r"\W", "_", self.path.stem)
        return f"{stem}_L{self.line}"


def extract(path: Path) -> tuple[list[Snippet], int]:
    """Returns the Swift snippets of one Markdown file, and how many were marked to skip."""
    snippets: list[Snippet] = []
    skipped = 0
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
            if previous.startswith(SKIP_MARKER) and previous.endswith("-->"):
                skipped += 1
            else:
                snippets.append(Snippet(path, start, body))
        previous = ""
    return snippets, skipped


def render(snippet: Snippet) -> str:
    """One Swift file for one snippet; `#sourceLocation` maps every line back to the Markdown."""
    where = str(snippet.path)
    at = lambda line: f'#sourceLocation(file: "{where}", line: {line})'
    code = [line.rstrip() for line in snippet.lines]
    out = [f"// {snippet.path.relative_to(ROOT)}, line {snippet.line}. Generated; do not edit."]
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
    if len(out) > 1:
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


def main() -> int:
    verbose = "-v" in sys.argv[1:]
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
    if sources.exists():
        for stale in sources.glob("*.swift"):
            if stale.name not in wanted:
                stale.unlink()
    for name, text in wanted.items():
        write_if_changed(sources / name, text)

    print(f"Compiling {len(snippets)} Swift snippets ({skipped} marked skip) in {WORK.relative_to(ROOT)}")
    result = subprocess.run(
        ["swift", "build", "--package-path", str(WORK)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    log = result.stdout
    markdown = {str(source) for source in SOURCES}
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
