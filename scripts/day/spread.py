"""Several simulated days' figures side by side: each figure's mean and range over the days,
per build, and with two builds the difference seed by seed. One day's switch count varies by
up to about 0.9 for the same build (docs/performance.md), so a change to placement is judged
over several days, not one.

    python3 spread.py DIR   (DIR/<build>/seed<N>/report.json, as bench-days.sh lays them out)
"""

import json
import statistics
import sys
from pathlib import Path

# (label, path into report.json), the figures of the day's table that a change moves.
FIGURES = [
    ("served on the first try, %", ("firstTry", "percent")),
    ("upstream requests per served turn", ("upstream", "perServedTurn")),
    ("limit/quota answers", ("upstream", "limitAnswers")),
    ("model switches per conversation", ("switchesPerConversation", "average")),
    ("most switches in one conversation", ("switchesPerConversation", "max")),
    ("conversations on one model at once", ("conversationsOnOneModel", "max")),
    ("served below the strongest tier with room, %", ("belowStrongestWithRoom", "percent")),
    ("time to first byte p95, ms", ("timeToFirstByte", "p95Ms")),
]


def figure(report, path):
    value = report
    for key in path:
        value = (value or {}).get(key)
    return value


def reports(build_dir):
    found = {}
    for path in sorted(build_dir.glob("seed*/report.json")):
        found[path.parent.name.removeprefix("seed")] = json.loads(path.read_text())
    return found


def spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    mean = statistics.mean(values)
    return f"{mean:.2f} ({min(values):g}-{max(values):g})"


def main():
    root = Path(sys.argv[1])
    builds = {d.name: reports(d) for d in sorted(root.iterdir()) if d.is_dir()}
    builds = {name: r for name, r in builds.items() if r}
    if not builds:
        sys.exit(f"spread: no seed*/report.json under {root}/*/")
    names = list(builds)
    seeds = sorted({s for r in builds.values() for s in r}, key=lambda s: (len(s), s))
    print(f"days: seeds {', '.join(seeds)}; each figure's mean (range) over them\n")
    print("| figure | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for label, path in FIGURES:
        cells = [spread([figure(r, path) for r in builds[n].values()]) for n in names]
        print(f"| {label} | " + " | ".join(cells) + " |")
    if len(names) == 2:
        a, b = names
        diffs = [(s, figure(builds[b][s], FIGURES[3][1]) - figure(builds[a][s], FIGURES[3][1]))
                 for s in seeds if s in builds[a] and s in builds[b]]
        if diffs:
            print(f"\nswitches per conversation, {b} less {a}, seed by seed (run side by side): "
                  + ", ".join(f"seed {s}: {d:+.2f}" for s, d in diffs)
                  + f"; mean {statistics.mean(d for _, d in diffs):+.2f}")


if __name__ == "__main__":
    main()
