#!/usr/bin/env python3
"""Draw a pipeline's per-stage timelines as Gantt charts, showing the bubble (claim MP-2).

    tools/plot_pipeline.py results/claims.json results/pipeline.png
    tools/plot_pipeline.py TIMELINE.json [MORE.json ...] OUT.png

Reads the timelines MP-2 recorded in a claims report (`gradlab claims --only MP-2`: GPipe
and 1F1B on 4 stages with 8 micro-batches), or files that gl::dist::write_timeline_json
wrote: {"title": ..., "stages": [[{"op": "F", "mb": 0, "start": s, "end": s}, ...], ...]}.
One chart per timeline, stacked:
a row per stage, forwards light and backwards dark, each box labelled with its
micro-batch; the white gaps are the bubble. The title gives the measured bubble fraction
and (p-1)/(m+p-1). Needs python3-matplotlib.
"""

import json
import sys


def bubble(stages):
    events = [e for s in stages for e in s]
    begin = min(e["start"] for e in events)
    end = max(e["end"] for e in events)
    busy = sum(e["end"] - e["start"] for e in events)
    return 1.0 - busy / (len(stages) * (end - begin)), begin


def checked(title, stages):
    if not stages or not all(stages):
        raise ValueError("a stage has no events")
    for s in stages:
        for e in s:
            if e["op"] not in ("F", "B") or not e["end"] >= e["start"]:
                raise ValueError(f"bad event {e}")
    return title, stages


def load(path):
    """The (title, stages) timelines in a claims report or a timeline file."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if "claims" in data:
            mp2 = next((c for c in data["claims"] if c["id"] == "MP-2"), None)
            if mp2 is None or not mp2.get("data", {}).get("timelines"):
                raise ValueError("no MP-2 result with timelines")
            return [checked(t["title"], t["stages"]) for t in mp2["data"]["timelines"]]
        return [checked(data.get("title", path), data["stages"])]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"plot_pipeline.py: {path}: not a pipeline timeline ({e}); "
                         "write one with `gradlab claims --only MP-2`")


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    charts = [chart for p in sys.argv[1:-1] for chart in load(p)]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_pipeline.py: needs matplotlib (apt-get install python3-matplotlib)", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(len(charts), 1, figsize=(11, 1.0 + 0.55 * sum(len(s) for _, s in charts)),
                             squeeze=False)
    for ax, (title, stages) in zip(axes[:, 0], charts):
        fraction, begin = bubble(stages)
        p = len(stages)
        m = max(e["mb"] for s in stages for e in s) + 1
        for row, events in enumerate(stages):
            for e in events:
                start, width = (e["start"] - begin) * 1e3, (e["end"] - e["start"]) * 1e3
                color = "#9ecae1" if e["op"] == "F" else "#3182bd"
                ax.broken_barh([(start, width)], (row - 0.4, 0.8), facecolors=color, edgecolor="black", linewidth=0.5)
                ax.text(start + width / 2, row, f'{e["op"]}{e["mb"]}', ha="center", va="center", fontsize=7)
        ax.set_yticks(range(p))
        ax.set_yticklabels([f"stage {s}" for s in range(p)])
        ax.invert_yaxis()
        ax.set_xlabel("ms")
        ax.set_title(f"{title}: bubble {fraction:.3f} measured, (p-1)/(m+p-1) = {(p - 1) / (m + p - 1):.3f}",
                     fontsize=9)
    fig.tight_layout()
    fig.savefig(sys.argv[-1], dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
