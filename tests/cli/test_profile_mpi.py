"""`gradlab train --profile` under mpirun, then `gradlab profile merge` (issue 16: a trace
from a DDP run over MPI merges the ranks into one timeline, one track per rank).

Two MPI processes train SimpleNet with DDP on 1280 Fashion-MNIST examples with
--profile DIR: each rank writes its own trace (trace.json, trace_rank1.json). The merged
file must be one valid Chrome trace: one process (pid) per rank, named "rank R"; each
rank's steps and all-reduces on its own track; on every thread the complete events
properly nested (balanced) with non-negative durations; every flow arrow with both ends.
About two seconds.

Run: GRADLAB_EXE=build/tools/gradlab MPIRUN=mpirun python3 tests/cli/test_profile_mpi.py
(meson test --suite cli sets both; without the program, mpirun or the data it exits 77, skipped)
"""

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(os.environ.get("GRADLAB_EXE", ROOT / "build" / "tools" / "gradlab"))
MPIRUN = os.environ.get("MPIRUN") or shutil.which("mpirun")
DATA = Path("/usr/share/datasets/fashion-mnist")
RANKS = 2
MPIRUN_ARGS = ["--oversubscribe", "--allow-run-as-root", "--bind-to", "none", "--mca", "btl", "self,vader"]


def run(args, timeout):
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done


def nesting_errors(events):
    """Complete events of one thread that overlap without one containing the other."""
    slack = 1e-3  # 1 ns: microseconds with three decimals, shifted by the merge in floating point
    errors = []
    stack = []  # ends of the open enclosing events
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        end = e["ts"] + e["dur"]
        while stack and stack[-1] <= e["ts"] + slack:
            stack.pop()
        if stack and end > stack[-1] + slack:
            errors.append(f"{e['name']} at {e['ts']} ends at {end}, after its parent ends at {stack[-1]}")
        stack.append(end)
    return errors


class ProfileMpi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = Path(tempfile.mkdtemp(prefix="gradlab_profile_mpi_"))
        run([MPIRUN, *MPIRUN_ARGS, "-np", str(RANKS), str(EXE), "train", "--parallel", "ddp", "--limit", "1280",
             "--epochs", "1", "--threads", "1", "--profile", str(cls.dir)], timeout=240)
        cls.rank_traces = [cls.dir / ("trace.json" if r == 0 else f"trace_rank{r}.json") for r in range(RANKS)]
        cls.merged_path = cls.dir / "merged.json"
        if all(p.exists() for p in cls.rank_traces):
            run([str(EXE), "profile", "merge", *map(str, cls.rank_traces), "--out", str(cls.merged_path)], timeout=60)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def merged(self):
        with open(self.merged_path) as f:
            return json.load(f)["traceEvents"]  # raises if the file is not JSON

    def test_each_rank_writes_its_own_trace(self):
        for r, path in enumerate(self.rank_traces):
            self.assertTrue(path.exists(), f"rank {r} wrote no {path.name}: {sorted(os.listdir(self.dir))}")
            with open(path) as f:
                pids = {e["pid"] for e in json.load(f)["traceEvents"] if e.get("ph") == "X"}
            self.assertEqual(pids, {r}, f"{path.name} holds events of pids {pids}")

    def test_merged_has_one_named_process_per_rank(self):
        events = self.merged()
        pids = {e["pid"] for e in events if e.get("ph") == "X"}
        self.assertEqual(pids, set(range(RANKS)))
        names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
        self.assertEqual(names, {r: f"rank {r}" for r in range(RANKS)})

    def test_every_rank_has_steps_and_all_reduces_on_its_track(self):
        by_rank = collections.defaultdict(collections.Counter)
        for e in self.merged():
            if e.get("ph") == "X":
                by_rank[e["pid"]][e["cat"]] += 1
        for r in range(RANKS):
            self.assertGreaterEqual(by_rank[r]["step"], 2, f"rank {r}: {dict(by_rank[r])}")
            self.assertGreater(by_rank[r]["communication"], 0, f"rank {r}: {dict(by_rank[r])}")
            self.assertGreater(by_rank[r]["op_forward"], 0, f"rank {r}: {dict(by_rank[r])}")
        # The ranks step in lockstep (DDP): the same number of profiled steps.
        self.assertEqual(len({by_rank[r]["step"] for r in range(RANKS)}), 1, dict(by_rank))

    def test_events_are_balanced_per_thread(self):
        threads = collections.defaultdict(list)
        for e in self.merged():
            if e.get("ph") == "X":
                self.assertGreaterEqual(e["dur"], 0, e)
                self.assertGreaterEqual(e["ts"], 0, e)
                threads[(e["pid"], e["tid"])].append(e)
            else:
                self.assertIn(e.get("ph"), {"M", "C", "s", "f"}, e)
        for thread, events in threads.items():
            self.assertEqual(nesting_errors(events), [], f"pid {thread[0]} tid {thread[1]}")

    def test_flows_have_both_ends(self):
        ends = collections.defaultdict(list)
        for e in self.merged():
            if e.get("ph") in ("s", "f"):
                ends[e["id"]].append(e["ph"])
        for flow_id, phases in ends.items():
            self.assertEqual(sorted(phases), ["f", "s"], f"flow {flow_id}")

    def test_the_ranks_overlap_in_time(self):
        # Aligned on one clock: the ranks' first steps start within a second of each other.
        first_step = {}
        for e in self.merged():
            if e.get("ph") == "X" and e["cat"] == "step":
                first_step[e["pid"]] = min(first_step.get(e["pid"], float("inf")), e["ts"])
        self.assertLess(max(first_step.values()) - min(first_step.values()), 1e6, first_step)


if __name__ == "__main__":
    if not EXE.exists() or not MPIRUN or not DATA.is_dir():
        print(f"skipped: needs {EXE}, mpirun and {DATA}")
        sys.exit(77)
    unittest.main()
