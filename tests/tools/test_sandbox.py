"""Tests of tools/sandbox.py: what a sandboxed program can and cannot do, under hard limits.

Each attack is small and bounded (a few dozen processes, seconds of CPU, megabytes of
output) so that it is safe on a shared machine even if the sandbox failed.

Run: python3 -m unittest discover -s tests/tools -p test_sandbox.py
Without a usable bubblewrap these tests skip, unless GRADLAB_REQUIRE_SANDBOX=1 (set by
./gradlab test), which makes them fail instead.
"""

import os
import sys
import tempfile
import time
import unittest
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import sandbox  # noqa: E402

PYTHON = "/usr/bin/python3"  # inside the sandbox only /usr is there, whatever runs the tests


def sandbox_problem() -> str | None:
    try:
        sandbox.check()
        return None
    except sandbox.SandboxUnavailable as e:
        return str(e)


PROBLEM = sandbox_problem()
if PROBLEM and os.environ.get("GRADLAB_REQUIRE_SANDBOX") == "1":
    raise RuntimeError(f"GRADLAB_REQUIRE_SANDBOX=1 but the sandbox does not work: {PROBLEM}")


def processes_with(token: str) -> list[int]:
    """Processes anywhere on the machine whose command line contains token."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@unittest.skipIf(PROBLEM, f"no sandbox here: {PROBLEM}")
class SandboxTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="gradlab-sandbox-test-"))
        os.chmod(self.tmp, 0o755)  # the sandbox user must be able to reach its folders
        self.log = self.tmp / "log.txt"
        self.token = f"gradlab-test-{uuid.uuid4().hex}"

    def tearDown(self) -> None:
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_py(self, code: str, limits: sandbox.Limits = sandbox.Limits(wall_s=30), **kw):
        result = sandbox.run([PYTHON, "-c", code, self.token], read_only=kw.pop("read_only", []),
                             writable=kw.pop("writable", []), limits=limits, log_path=self.log, **kw)
        self.assertEqual(processes_with(self.token), [], "a sandboxed process outlived run()")
        return result

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def test_runs_as_an_unprivileged_user_and_reports_the_exit_status(self):
        result = self.run_py("import os,sys; print(os.getuid(), os.getgid(), "
                             "open('/proc/self/status').read().split('CapEff:')[1].split()[0]);"
                             "sys.exit(7)")
        self.assertEqual(result.returncode, 7)
        self.assertEqual(self.output().split(), ["65534", "65534", "0000000000000000"])

    def test_a_signal_is_reported_by_name(self):
        result = self.run_py("import os,signal; os.kill(os.getpid(), signal.SIGSEGV)")
        self.assertEqual((result.returncode, result.signal), (-11, "SIGSEGV"))

    def test_a_bounded_fork_loop_stops_at_the_process_limit(self):
        code = ("import os,sys,time\n"
                "n = 0\n"
                "for _ in range(200):\n"
                "    try: pid = os.fork()\n"
                "    except OSError: break\n"
                "    if pid == 0: time.sleep(1000); os._exit(0)\n"
                "    n += 1\n"
                "print('forked', n, flush=True)\n")
        result = self.run_py(code, sandbox.Limits(processes=20, wall_s=60))
        forked = int(self.output().split()[1])
        self.assertLess(forked, 20)
        self.assertGreater(forked, 5)
        self.assertEqual(result.returncode, 0)

    def test_a_huge_allocation_fails_inside_the_memory_limit(self):
        result = self.run_py("b = bytearray(8 << 30); print('allocated')",
                             sandbox.Limits(memory_mb=512, wall_s=30))
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("MemoryError", self.output())
        self.assertNotIn("allocated", self.output())

    def test_runaway_output_is_cut_off_and_the_program_killed(self):
        result = self.run_py("import sys\nwhile True: sys.stdout.write('x' * 4096)",
                             sandbox.Limits(output_bytes=100_000, wall_s=30))
        self.assertTrue(result.output_truncated)
        self.assertFalse(result.timed_out)
        self.assertLess(self.log.stat().st_size, 100_000 + 200)
        self.assertLess(result.seconds, 20)

    def test_a_program_that_runs_too_long_is_killed_at_the_wall_clock_limit(self):
        result = self.run_py("import time; time.sleep(1000)", sandbox.Limits(wall_s=1))
        self.assertTrue(result.timed_out)
        self.assertLess(result.seconds, 15)

    def test_stop_kills_running_sandboxes_at_once(self):
        # What an interrupted grader does: every sandbox dies now, not at its time limit.
        import threading
        results = []
        try:
            for code in ("import time; time.sleep(1000)",  # stopped while its output is read
                         "import os,time; os.close(1); os.close(2); time.sleep(1000)"):  # while waited for
                sandbox.STOP.clear()
                timer = threading.Timer(1.0, sandbox.STOP.set)
                timer.start()
                results.append(self.run_py(code, sandbox.Limits(wall_s=120)))
                timer.cancel()
        finally:
            sandbox.STOP.clear()
        for result in results:
            self.assertTrue(result.timed_out)
            self.assertGreater(result.seconds, 0.9)  # it ran until STOP
            self.assertLess(result.seconds, 15)

    def test_an_interrupted_run_leaves_no_process(self):
        # Ctrl-C in the grader raises KeyboardInterrupt wherever the main thread is.
        import _thread
        import threading
        timer = threading.Timer(1.0, _thread.interrupt_main)
        timer.start()
        with self.assertRaises(KeyboardInterrupt):
            sandbox.run([PYTHON, "-c", "import time; time.sleep(1000)", self.token], read_only=[],
                        writable=[], limits=sandbox.Limits(wall_s=120), log_path=self.log)
        timer.cancel()
        self.assertEqual(processes_with(self.token), [])

    def test_stop_ends_the_wait_for_a_checker(self):
        import subprocess
        import threading
        import graded_run
        child = subprocess.Popen(["sleep", "100"], start_new_session=True)
        timer = threading.Timer(1.0, sandbox.STOP.set)
        timer.start()
        try:
            start = time.monotonic()
            _, timed_out = graded_run.wait_checker(child, 60)
        finally:
            timer.cancel()
            sandbox.STOP.clear()
        self.assertTrue(timed_out)
        self.assertLess(time.monotonic() - start, 10)
        self.assertIsNotNone(child.poll())

    def test_a_program_that_closes_its_output_is_still_timed(self):
        result = self.run_py("import os,time; os.close(1); os.close(2); time.sleep(1000)",
                             sandbox.Limits(wall_s=2))
        self.assertTrue(result.timed_out)

    def test_cpu_time_is_limited(self):
        result = self.run_py("while True: pass", sandbox.Limits(cpu_s=1, wall_s=60))
        self.assertFalse(result.timed_out)
        self.assertIn(result.signal, ("SIGXCPU", "SIGKILL"))

    def test_file_size_is_limited(self):
        result = self.run_py("f = open('/tmp/big', 'wb')\nfor _ in range(64): f.write(bytes(1 << 20))",
                             sandbox.Limits(file_mb=4, wall_s=30))
        self.assertNotEqual(result.returncode, 0)

    def test_a_daemon_is_gone_when_run_returns_and_writes_nothing_later(self):
        out = self.tmp / "out"
        out.mkdir()
        # A double fork with setsid: the grandchild is no child of the command's, in a
        # session of its own, and waits to write into the writable folder.
        code = ("import os,sys,time\n"
                "if os.fork() == 0:\n"
                "    os.setsid()\n"
                "    if os.fork() == 0:\n"
                "        time.sleep(3)\n"
                "        open(sys.argv[2] + '/late', 'w').write('rewritten')\n"
                "    os._exit(0)\n"
                "time.sleep(0.5)\n"
                "print('parent done')\n")
        result = sandbox.run([PYTHON, "-c", code, self.token, str(out)], read_only=[],
                             writable=[out], limits=sandbox.Limits(wall_s=30), log_path=self.log)
        self.assertEqual(result.returncode, 0)
        self.assertEqual(processes_with(self.token), [])
        time.sleep(4)
        self.assertFalse((out / "late").exists())

    def test_no_network(self):
        code = ("import socket\n"
                "try:\n"
                "    socket.create_connection(('1.1.1.1', 53), timeout=3); print('connected')\n"
                "except OSError as e: print('refused', e)\n"
                "print(sorted(n for _, n in socket.if_nameindex()))\n")
        self.run_py(code)
        self.assertIn("refused", self.output())
        self.assertIn("['lo']", self.output())

    def test_the_repository_is_absent_unless_mounted_and_then_read_only(self):
        probe = REPO / "README.md"
        code = (f"import sys\n"
                f"try: open({str(probe)!r}).read(10); print('readable')\n"
                f"except OSError: print('absent')\n"
                f"try: open({str(REPO / 'gradlab-sandbox-probe')!r}, 'w'); print('written')\n"
                f"except OSError: print('not writable')\n")
        self.run_py(code)
        self.assertEqual(self.output().split(), ["absent", "not", "writable"])
        self.run_py(code, read_only=[REPO])
        self.assertEqual(self.output().split(), ["readable", "not", "writable"])
        self.assertFalse((REPO / "gradlab-sandbox-probe").exists())

    def test_tmp_is_private_and_a_folder_can_be_mounted_elsewhere(self):
        work = self.tmp / "work"
        work.mkdir()
        name = f"{self.token}.txt"
        code = (f"open('/tmp/{name}', 'w').write('x')\n"
                f"open('/inside/made', 'w').write('y')\n")
        result = self.run_py(code, writable=[(work, Path("/inside"))])
        self.assertEqual(result.returncode, 0, self.output())
        self.assertFalse((Path("/tmp") / name).exists())
        self.assertEqual((work / "made").read_text(), "y")

    def test_the_prefix_runs_a_command_in_the_same_sandbox(self):
        import subprocess
        argv = sandbox.prefix([], [], sandbox.Limits()) + [PYTHON, "-c", "import os; print(os.getuid())"]
        done = subprocess.run(argv, stdout=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(done.stdout.strip(), "65534")


class UnavailableTest(unittest.TestCase):
    def test_a_missing_bwrap_is_a_clear_setup_error(self):
        saved = sandbox.BWRAP
        sandbox.BWRAP = "gradlab-no-such-bwrap"
        try:
            with self.assertRaisesRegex(sandbox.SandboxUnavailable, "apt-get install bubblewrap"):
                sandbox.check()
        finally:
            sandbox.BWRAP = saved


if __name__ == "__main__":
    unittest.main()
