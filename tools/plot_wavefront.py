#!/usr/bin/env python3
"""Draw the wavefront crossing a systolic array: one small panel per cycle of a trace.

Reads the JSON that build/tools/systolic_trace writes (--format json) and writes a PNG
sheet of small multiples. Each panel is the R x C grid after one cycle. In the streaming
cycles of a weight-stationary pass, a cell that did a multiply-add is coloured by the row
m of A it worked on (m = t - r - c, so each row of A is an anti-diagonal band moving down
and right); in the output-stationary dataflow, by the step k of the sum (k = t - r - c).
Cells holding a value but idle are grey, empty ones white; while weights load, cells with
a weight are light blue.

    build/tools/systolic_trace --rows 4 --cols 4 -M 6 -N 4 -K 4 --format json > trace.json
    /usr/bin/python3 tools/plot_wavefront.py trace.json labs/14-systolic/wavefront.png
    (or '-' for the trace on standard input)
"""

from __future__ import annotations

import argparse
import json
import math
import sys


def load_matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        print("plot_wavefront.py: python3-matplotlib is not installed (apt-get install python3-matplotlib)",
              file=sys.stderr)
        return None


def read_trace(path: str) -> dict:
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    try:
        trace = json.loads(text)
        trace["rows"], trace["cols"], trace["frames"]  # noqa: B018 - the fields the plot needs
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise SystemExit(f"plot_wavefront.py: {path} is not a trace from systolic_trace --format json ({e})")
    return trace


def panel_colours(trace: dict, frame: dict, stream_cycle: int, cmap) -> list[list[tuple]]:
    """The colour of every cell of one frame (see the module docstring)."""
    rows, cols = trace["rows"], trace["cols"]
    colours = []
    for r in range(rows):
        line = []
        for c in range(cols):
            cell = frame["cells"][r * cols + c]
            if cell["mac"]:
                line.append(cmap((stream_cycle - r - c) % 10))
            elif frame["phase"] == "load weights" and cell["has_b"]:
                line.append((0.75, 0.85, 1.0, 1.0))
            elif cell["has_a"] or cell["has_b"]:
                line.append((0.85, 0.85, 0.85, 1.0))
            else:
                line.append((1.0, 1.0, 1.0, 1.0))
        colours.append(line)
    return colours


def draw(trace: dict, out: str, plt) -> None:
    frames = trace["frames"]
    per_row = min(8, len(frames))
    sheet_rows = math.ceil(len(frames) / per_row)
    fig, axes = plt.subplots(sheet_rows, per_row, figsize=(1.7 * per_row, 1.9 * sheet_rows + 0.6), squeeze=False)
    cmap = plt.get_cmap("tab10")
    stream_cycle, last_pass = 0, None
    for i, ax in enumerate(axes.flat):
        ax.set_xticks([])
        ax.set_yticks([])
        if i >= len(frames):
            ax.axis("off")
            continue
        frame = frames[i]
        if frame["pass"] != last_pass:
            stream_cycle, last_pass = 0, frame["pass"]
        ax.imshow(panel_colours(trace, frame, stream_cycle, cmap), interpolation="nearest")
        for r in range(trace["rows"]):
            for c in range(trace["cols"]):
                if frame["cells"][r * trace["cols"] + c]["mac"]:
                    ax.text(c, r, str(stream_cycle - r - c), ha="center", va="center", fontsize=7)
        ax.set_title(f"cycle {frame['cycle']}\n{frame['phase']}", fontsize=7)
        if frame["phase"] == "stream":
            stream_cycle += 1
    index = "row m of A" if trace["dataflow"] == "weight-stationary" else "step k"
    fig.suptitle(f"{trace['dataflow']} {trace['rows']}x{trace['cols']} array, "
                 f"{trace['M']}x{trace['N']}x{trace['K']} GEMM: {trace['cycles']} cycles "
                 f"(numbers: the {index} a cell multiplies)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out} ({len(frames)} cycles)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", help="JSON from systolic_trace --format json, or - for standard input")
    parser.add_argument("out", help="the PNG to write")
    args = parser.parse_args()
    trace = read_trace(args.trace)
    plt = load_matplotlib()
    if plt is None:
        return 1
    draw(trace, args.out, plt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
