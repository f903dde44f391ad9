#!/usr/bin/env python3
"""Runs untrusted code (a student's build and tests) in a bubblewrap sandbox.

    from sandbox import Limits, run
    result = run(["ninja", "-C", "/grade/build"], read_only=[(staged, Path("/grade/src"))],
                 writable=[(build, Path("/grade/build"))], limits=Limits(cpu_s=600),
                 log_path=work / "build.log")

What the sandboxed program gets, and why:
- an unprivileged user: uid/gid 65534 (nobody) inside a user namespace of its own, no
  capabilities, no_new_privs, no nested user namespaces. When the grader runs as root it
  first drops to uid 65534 outside too (setpriv), because the kernel exempts uid 0 from
  RLIMIT_NPROC; the writable folders are then handed to that uid.
- its own PID, IPC, UTS, cgroup and network namespaces: it sees no other process, and the
  network namespace has nothing but a loopback device, so no network.
- a file system of its own: /usr and /etc read-only, a private /proc and /dev, a private
  /tmp (a tmpfs of limited size), the `read_only` folders read-only and the `writable`
  folders writable, and nothing else: not the repository, the rubric, the tests, the
  reference solutions, the grader's results or the caller's home.
- resource limits (set inside the namespace, so RLIMIT_NPROC counts only the sandbox's own
  processes and threads): processes, CPU seconds per process, address space, file size,
  no core dumps; a wall-clock limit; an output limit (the output is read through a pipe,
  and the program is killed when it exceeds the limit).
- an end: bwrap's PID 1 inside the namespace exits when the command exits, and the kernel
  then kills every process left in the namespace (a daemon started with setsid or a
  double fork included). `run` returns only after that, and on a timeout or too much
  output it kills the namespace's PID 1 itself. --die-with-parent does the same when the
  grader dies.

`prefix(...)` returns the argv prefix alone (for a trusted program that starts the
student's program itself, e.g. a timed item); `run(...)` adds the output cap, the wall
clock, the kill and the wait. `check()` says, before anything is built, whether sandboxing
works on this machine (bwrap installed, user namespaces allowed).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Union

SANDBOX_UID = 65534  # nobody: the uid of the sandboxed program, inside and (as root) outside
BWRAP = os.environ.get("GRADLAB_BWRAP", "bwrap")  # another bubblewrap, or a missing one in tests
SYSTEM_READ_ONLY = ["/usr", "/etc"]  # what every program needs: libraries, compilers, passwd
MERGED_USR_LINKS = ["/bin", "/lib", "/lib64", "/sbin"]  # symlinks into /usr on Debian
KILL_GRACE_S = 10.0  # how long the namespace may take to die after its PID 1 is killed
# Set when the program running sandboxes is interrupted (Ctrl-C, SIGTERM): each running
# sandbox is then killed as if its time were up, within POLL_S, so that the program can
# clean up and stop instead of waiting out every time limit.
STOP = threading.Event()
POLL_S = 0.25

# A folder given as one path is mounted at the same path inside; a (source, inside) pair
# mounts the source at another path (so that a build made in one folder can be reused
# from a copy: meson writes absolute paths).
Mount = Union[Path, "tuple[Path, Path]"]


class SandboxUnavailable(Exception):
    """The sandbox cannot be set up on this machine: a problem of the grading setup."""


@dataclass(frozen=True)
class Limits:
    """Limits on one sandboxed run. memory_mb=None: no address-space limit (for sanitizer
    builds, whose shadow memory reserves terabytes of address space; cap them with
    ASAN_OPTIONS=hard_rss_limit_mb instead)."""

    cpu_s: float = 600  # CPU seconds per process (RLIMIT_CPU)
    memory_mb: int | None = 4096  # address space per process (RLIMIT_AS)
    processes: int = 256  # processes and threads of the sandbox together (RLIMIT_NPROC)
    output_bytes: int = 4 << 20  # stdout and stderr together, read through a pipe
    wall_s: float = 600  # wall clock for the whole run
    file_mb: int = 1024  # largest file it may write (RLIMIT_FSIZE), and the size of /tmp


@dataclass
class RunResult:
    returncode: int  # the command's exit status; -N when a signal N ended it
    signal: str | None  # the signal's name, e.g. "SIGSEGV", when one ended it
    timed_out: bool  # killed at the wall-clock limit
    output_truncated: bool  # killed because it wrote more than output_bytes
    seconds: float

    @property
    def killed_by_sandbox(self) -> bool:
        return self.timed_out or self.output_truncated


def mount_pair(mount: Mount) -> tuple[Path, Path]:
    if isinstance(mount, tuple):
        return Path(mount[0]).resolve(), Path(mount[1])
    return Path(mount).resolve(), Path(mount).resolve()


def rlimit_argv(limits: Limits) -> list[str]:
    """prlimit, run inside the namespace as the first command: soft = hard for every limit."""
    argv = ["prlimit", f"--nproc={limits.processes}", f"--cpu={max(1, int(limits.cpu_s))}",
            f"--fsize={limits.file_mb << 20}", "--core=0"]
    if limits.memory_mb is not None:
        argv.append(f"--as={limits.memory_mb << 20}")
    return argv + ["--"]


def default_env() -> dict[str, str]:
    path = "/usr/local/bin:/usr/bin:/bin"
    if Path("/usr/local/cuda/bin").is_dir():
        path = "/usr/local/cuda/bin:" + path
    return {"PATH": path, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}


def prefix(read_only: list[Mount], writable: list[Mount], limits: Limits, *,
           cwd: Path | None = None, env: dict[str, str] | None = None,
           read_only_fds: list[tuple[int, Path]] = (), as_grader: bool = False) -> list[str]:
    """The argv prefix that runs a command in the sandbox: append the command's argv.

    env: variables added to a clean environment (PATH, HOME=/tmp, TMPDIR, LANG).
    cwd: the working folder inside (default /tmp).
    read_only_fds: (open folder descriptor, inside path): a folder mounted read-only from a
    descriptor, for one the sandbox user could not reach by its path (pass the fds on).
    as_grader: keep the grader's own uid outside (no process limit for root then): only for
    trusted code that needs the grader's files, e.g. a build of the pristine repository."""
    argv: list[str] = []
    if os.geteuid() == 0 and not as_grader:  # uid 0 is exempt from RLIMIT_NPROC: become nobody first
        argv += ["setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
                 "--inh-caps=-all"]
    argv += [BWRAP, "--unshare-all", "--unshare-user", "--disable-userns",
             "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
             "--die-with-parent", "--new-session", "--clearenv"]
    for name, value in {**default_env(), **(env or {})}.items():
        argv += ["--setenv", name, value]
    for folder in SYSTEM_READ_ONLY:
        argv += ["--ro-bind", folder, folder]
    for link in MERGED_USR_LINKS:
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            argv += ["--ro-bind", link, link]
    argv += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(limits.file_mb << 20), "--tmpfs", "/tmp"]
    for mount in read_only:
        source, inside = mount_pair(mount)
        argv += ["--ro-bind", str(source), str(inside)]
    for mount in writable:
        source, inside = mount_pair(mount)
        argv += ["--bind", str(source), str(inside)]
    for fd, inside in read_only_fds:
        argv += ["--ro-bind-fd", str(fd), str(inside)]
    argv += ["--chdir", str(cwd or "/tmp")]
    return argv + ["--"] + rlimit_argv(limits)


def hand_over(folder: Path) -> None:
    """Makes a writable folder the sandbox user's (only needed when the grader is root)."""
    if os.geteuid() != 0:
        return
    os.chown(folder, SANDBOX_UID, SANDBOX_UID)
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            os.chown(os.path.join(root, name), SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)


def check() -> None:
    """Raises SandboxUnavailable, with what to do, unless a trivial sandboxed run works."""
    if shutil.which(BWRAP) is None:
        raise SandboxUnavailable("bubblewrap is not installed: apt-get install bubblewrap")
    if shutil.which("prlimit") is None:
        raise SandboxUnavailable("prlimit is missing: apt-get install util-linux")
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        raise SandboxUnavailable("setpriv is missing: apt-get install util-linux")
    try:
        done = subprocess.run(prefix([], [], Limits(wall_s=30)) + ["true"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxUnavailable(f"bwrap could not run: {e}") from None
    if done.returncode != 0:
        said = done.stdout.decode(errors="replace").strip().splitlines()
        raise SandboxUnavailable(
            f"bwrap cannot make a sandbox here ({said[-1] if said else done.returncode}); "
            f"it needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
            f"user.max_user_namespaces > 0; in a container, a seccomp profile that allows them)")


class _Namespace:
    """The sandbox's PID 1 (from bwrap's --info-fd), held by a pidfd so that killing it
    can never hit a reused process id."""

    def __init__(self, info_fd: int, deadline: float) -> None:
        self.pidfd: int | None = None
        text = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([info_fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(info_fd, 4096)
            if not chunk:
                break
            text += chunk
            try:
                pid = json.loads(text)["child-pid"]
            except (ValueError, KeyError):
                continue
            try:
                self.pidfd = os.pidfd_open(pid)
            except ProcessLookupError:
                pass  # already over
            break

    def kill(self) -> None:
        if self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def wait_gone(self, timeout: float) -> bool:
        """True once PID 1 has exited: by then the kernel has killed and reaped every other
        process of the namespace (PID 1's exit waits for them)."""
        if self.pidfd is None:
            return True
        ready, _, _ = select.select([self.pidfd], [], [], timeout)
        return bool(ready)

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def run(argv: list[str], *, read_only: list[Mount], writable: list[Mount], limits: Limits,
        log_path: Path, cwd: Path | None = None, env: dict[str, str] | None = None,
        read_only_fds: list[tuple[int, Path]] = (), as_grader: bool = False) -> RunResult:
    """Runs argv in the sandbox; its output (stdout and stderr) goes to log_path, at most
    limits.output_bytes of it. Returns when every process of the sandbox is gone."""
    for mount in writable if not as_grader else []:
        hand_over(mount_pair(mount)[0])
    info_read, info_write = os.pipe()
    command = prefix(read_only, writable, limits, cwd=cwd, env=env, read_only_fds=read_only_fds,
                     as_grader=as_grader)
    command[command.index("--die-with-parent"):command.index("--die-with-parent")] = \
        ["--info-fd", str(info_write)]
    start = time.monotonic()
    deadline = start + limits.wall_s
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        try:
            child = subprocess.Popen(command + list(argv), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     pass_fds=(info_write, *(fd for fd, _ in read_only_fds)),
                                     start_new_session=True)
        finally:
            os.close(info_write)
        namespace = _Namespace(info_read, deadline)
        os.close(info_read)
        try:
            timed_out, truncated = _copy_output(child, log, limits, deadline)
            if not (timed_out or truncated):  # the output ended; the command may not have
                timed_out = not _exited(child, deadline)
            if timed_out or truncated:
                namespace.kill()
            returncode = _wait(child, namespace)
        except BaseException:  # interrupted (KeyboardInterrupt): nothing of it outlives run()
            namespace.kill()
            _wait(child, namespace)
            raise
        finally:
            namespace.close()
    seconds = time.monotonic() - start
    name = None
    if 128 < returncode < 128 + 65:  # bwrap reports a command killed by signal N as 128 + N
        try:
            name = signal.Signals(returncode - 128).name
            returncode = -(returncode - 128)
        except ValueError:
            pass
    elif returncode < 0:  # bwrap itself killed
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else None
    return RunResult(returncode, name, timed_out, truncated, seconds)


def _copy_output(child: subprocess.Popen, log, limits: Limits, deadline: float) -> tuple[bool, bool]:
    """Copies the child's output to the log until it ends; (timed out, output too long)."""
    assert child.stdout is not None
    fd = child.stdout.fileno()
    written = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or STOP.is_set():
            return True, False
        ready, _, _ = select.select([fd], [], [], min(left, POLL_S))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:  # every process that held the pipe is gone
            return False, False
        room = limits.output_bytes - written
        log.write(chunk[:room])
        written += min(len(chunk), room)
        if len(chunk) > room:
            log.write(f"\n[sandbox: output cut off after {limits.output_bytes} bytes]\n".encode())
            return False, True


def _exited(child: subprocess.Popen, deadline: float) -> bool:
    while not STOP.is_set():
        try:
            child.wait(timeout=max(0.0, min(deadline - time.monotonic(), POLL_S)))
            return True
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                return False
    return False


def _wait(child: subprocess.Popen, namespace: _Namespace) -> int:
    """Waits for bwrap and for the namespace to be gone; kills both if they linger."""
    try:
        returncode = child.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        namespace.kill()
        try:
            returncode = child.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)  # --die-with-parent takes the rest along
            returncode = child.wait()
    if not namespace.wait_gone(KILL_GRACE_S):
        namespace.kill()
        namespace.wait_gone(KILL_GRACE_S)
    if child.stdout:
        child.stdout.close()
    return returncode
