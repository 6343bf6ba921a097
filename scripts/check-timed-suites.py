#!/usr/bin/env python3
"""Check that every test suite of the root package that carries a time limit runs in CI's
process of timed suites.

Under a sanitizer, the CPU-bound suites keep Swift concurrency's few threads busy for tens of
seconds, and a test of a few milliseconds can wait more than a minute for one: a time limit
that counts from the test's start then runs out although nothing is wrong. So `.ci/run` runs the
suites whose tests carry a time limit (`.timeLimit(...)` or `.realTimeLimit`) in a process of
their own, chosen by a regular expression over the tests' names. A suite that gains a time limit
and is not named by that expression would be starved again; this check fails CI instead.

Usage: check-timed-suites.py REGEX [TESTS_DIR]
Prints the suites with a time limit and whether REGEX selects them; exits 1 if one is not.
"""
import pathlib
import re
import sys

LIMIT = re.compile(r"\.(timeLimit\(|realTimeLimit\b)")
DECLARATION = re.compile(r"\b(?:struct|class|enum|actor)\s+([A-Za-z_][A-Za-z0-9_]*)")


def attribute_end(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the one opened at `start`."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index + 1
    raise ValueError("unbalanced parentheses")


def limited_names(root: pathlib.Path, path: pathlib.Path):
    """The names of the suites and tests in `path` whose attribute carries a time limit, as
    `swift test --filter` sees them: `Module.Type` for a suite, `Module.Type/function(` for a
    test. The module is the folder under `root` that holds the file."""
    module = path.relative_to(root).parts[0]
    text = path.read_text(encoding="utf-8")
    for match in re.finditer(r"@(Suite|Test)\(", text):
        end = attribute_end(text, match.end() - 1)
        if not LIMIT.search(text[match.start():end]):
            continue
        if match.group(1) == "Suite":
            declared = DECLARATION.search(text, end)
            yield f"{module}.{declared.group(1)}/"
        else:
            function = re.compile(r"\bfunc\s+([A-Za-z_][A-Za-z0-9_]*)").search(text, end)
            enclosing = [m.group(1) for m in DECLARATION.finditer(text, 0, match.start())]
            yield f"{module}.{enclosing[-1]}/{function.group(1)}("


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    timed = re.compile(sys.argv[1])
    root = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else "Tests")
    missing = []
    found = 0
    for path in sorted(root.rglob("*.swift")):
        for name in limited_names(root, path):
            found += 1
            selected = timed.search(name) is not None
            print(f"{'timed' if selected else 'NOT TIMED'}  {name}  ({path})")
            if not selected:
                missing.append(name)
    if found == 0:
        print(f"no suite with a time limit found under {root}", file=sys.stderr)
        return 1
    if missing:
        print(
            f"{len(missing)} suite(s) with a time limit are not selected by {sys.argv[1]!r}: "
            "add them to .ci/run's timed expression, so that a sanitizer run does not starve them",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
