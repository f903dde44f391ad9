#!/usr/bin/env python3
"""Runs a command that must FAIL cleanly: non-zero exit, within a time limit, saying why.

    expect_clean_failure.py --within 30 --expect "did not complete" -- mpirun ... prog

Passes (exit 0) when the command exits non-zero before --within seconds and its output
contains every --expect text (and none of the --forbid texts); fails (exit 1) when it
succeeds, hangs (it is killed at the limit) or fails without the message.
"""

import argparse
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--within", type=float, required=True, help="seconds the failure must take at most")
    parser.add_argument("--expect", action="append", default=[], help="text the output must contain")
    parser.add_argument("--forbid", action="append", default=[], help="text the output must not contain")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    start = time.monotonic()
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=args.within)
    except subprocess.TimeoutExpired as e:
        out = e.output.decode(errors="replace") if isinstance(e.output, bytes) else (e.output or "")
        print(out)
        print(f"FAIL: still running after {args.within:g} s: the failure was not detected (a hang)")
        return 1
    elapsed = time.monotonic() - start
    print(done.stdout)
    problems = []
    if done.returncode == 0:
        problems.append("the command succeeded, but it should have failed")
    problems += [f"the output does not say {text!r}" for text in args.expect if text not in done.stdout]
    problems += [f"the output says {text!r}" for text in args.forbid if text in done.stdout]
    if problems:
        print("FAIL: " + "; ".join(problems))
        return 1
    print(f"PASS: failed cleanly with exit status {done.returncode} after {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
