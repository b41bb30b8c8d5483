"""Print the randomized differential test's counts per table kind as a Markdown table.

Usage: python scripts/differential_report.py build/differential/results-long.json

The input is the reliability programme's results file of a run that included
``tests/interop/test_java_differential.py`` (``make differential-long`` writes
``build/differential/results-long.json``; ``make test`` writes ``build/reliability/results-fast.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TEST = "test_java_differential.py::test_random_operation_sequences_agree["


def main(path: str) -> None:
    results = json.loads(Path(path).read_text(encoding="utf-8"))
    failed = set(results.get("failed_tests", []))
    rows = []
    for node, counts in sorted(results["per_test"].items()):
        if TEST not in node:
            continue
        kind = node.split(TEST, 1)[1].rstrip("]")
        set_aside = {k.removeprefix("set_aside: "): v for k, v in counts.items() if k.startswith("set_aside: ")}
        rows.append((kind, counts.get("differential_cases", 0), counts.get("differential_agreed", 0),
                     counts.get("differential_set_aside", 0), set_aside, node in failed))
    print(f"Tier `{results['tier']}`, finished {results['finished']}: {len(rows)} table kinds, "
          f"{sum(r[1] for r in rows)} cases, {sum(r[2] for r in rows)} agreed, "
          f"{sum(r[3] for r in rows)} set aside by a known-Java-0.9 rule, "
          f"{sum(r[5] for r in rows)} kinds with a disagreement.\n")
    print("| table kind | cases | agreed | set aside (by rule) | result |")
    print("|---|---|---|---|---|")
    for kind, cases, agreed, aside, by_rule, bad in rows:
        rules = "; ".join(f"{name}: {n}" for name, n in sorted(by_rule.items())) or "-"
        print(f"| `{kind}` | {cases} | {agreed} | {aside} ({rules}) | {'**differs**' if bad else 'agree'} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
