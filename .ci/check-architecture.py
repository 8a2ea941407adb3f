#!/usr/bin/env python3
"""docs/architecture.md matches Package.swift (make test runs this).

- every target of Package.swift (tests aside) has a row in the Targets table, and every row names targets that exist;
- every dependency points downward in the picture: a target's row there is above the row of each target it
  depends on (the picture's rows are the layers; targets on one row do not depend on each other);
- the board's hushd does not depend, even through another target, on what only the offline tools need
  (HushRenderTool: hush-render's command line and the SVG plotter). .ci/check-hushd-links.sh checks the
  release binary's symbols too.
"""
import json
import re
import subprocess
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
package = json.loads(subprocess.run(["swift", "package", "--package-path", root, "dump-package"],
                                    check=True, capture_output=True, text=True).stdout)
targets = {t["name"]: t for t in package["targets"] if t["type"] != "test"}


def dependencies(target):
    names = []
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target"):
            if kind in dependency:
                names.append(dependency[kind][0])
    return [n for n in names if n in targets]


doc = open(f"{root}/docs/architecture.md", encoding="utf-8").read()
failures = []

# The Targets table: first column, names in `code`.
table = doc.split("## Targets", 1)[1].split("\n## ", 1)[0]
documented = set()
for line in table.splitlines():
    if line.startswith("| `"):
        documented.update(re.findall(r"`([\w-]+)`", line.split("|")[1]))
for name in sorted(set(targets) - documented):
    failures.append(f"target {name} is in Package.swift but not in docs/architecture.md's Targets table")
for name in sorted(documented - set(targets)):
    failures.append(f"docs/architecture.md's Targets table names {name}, which Package.swift does not have")

# The picture: the first fenced block; each target's row number.
picture = doc.split("```", 2)[1]
row_of = {}
for number, line in enumerate(picture.splitlines()):
    if line.strip().startswith("HushTesting"):
        continue  # the fakes sit beside the layers, not in them
    for name in re.findall(r"\b(Hush\w+|C[A-Z]\w+|hush[\w-]*)\b", line):
        if name in targets:
            row_of.setdefault(name, number)
for name in sorted(targets):
    if name not in row_of and name not in ("HushTesting", "CAllocationCounter", "CSpeexDSP"):
        failures.append(f"target {name} is not in docs/architecture.md's picture")
for name, target in sorted(targets.items()):
    if name not in row_of:
        continue
    for dependency in dependencies(target):
        if dependency in row_of and row_of[dependency] <= row_of[name]:
            failures.append(
                f"{name} depends on {dependency}, which the picture does not show below it "
                f"(rows {row_of[name]} and {row_of[dependency]})")

# What hushd links, through every target it depends on.
NOT_ON_THE_BOARD = {"hushd": ["HushRenderTool"]}
for executable, excluded in NOT_ON_THE_BOARD.items():
    closure, pending = set(), [executable]
    while pending:
        for dependency in dependencies(targets[pending.pop()]):
            if dependency not in closure:
                closure.add(dependency)
                pending.append(dependency)
    for name in excluded:
        if name in closure:
            failures.append(f"{executable} depends on {name}, which only the offline tools may link")

for failure in failures:
    print("FAIL", failure)
print(f"architecture: {len(targets)} targets, {len(failures)} problem(s)")
sys.exit(1 if failures else 0)
