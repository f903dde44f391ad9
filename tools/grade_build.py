"""The grader's builds: a trusted one of the pristine repository, and the student's, made
in a sandbox from a staged copy of the repository in which no reference of the lab exists.

Three kinds of build folder, all outside the repository:

- the **trusted build** (default CACHE/trusted; `--trusted-build` may name an existing
  build of this repository, e.g. build/ in CI): the pristine repository, built outside the
  sandbox. Its lab test programs are the checkers, its lab_reference the reference side of
  timed items. Updated incrementally (ninja) before each grading.
- the **base** (CACHE/base/), shared by every lab: `src/`, a copy of the repository
  without solutions/, .git or build folders, and `build/` (release) and `build-asan/`
  (AddressSanitizer + UBSan), configured like any build of the repository and built
  *inside the sandbox*, where the tree is /grade/src and the build /grade/src/build
  (-asan). The compile commands are then those of a checkout's build/, so the grader's
  compiler cache (mounted: the base compiles only pristine sources, as trusted code) serves
  what the machine compiled before, and keeps theirs. One base serves all labs: grading a
  lab builds that lab's test program in it, incrementally, so fifteen labs cost one build
  of the core library, not fifteen. A lock file serialises its updates.
- the **student build** (WORK/build, WORK/build-asan, WORK/src): WORK/src is a copy of the
  base's sources with the lab's core files replaced by the submission's (a file the
  student left out is the handout's stub); WORK/build* a copy of the base build *pruned* to
  what the lab's test program is made of: every output of the base build outside that
  program's inputs (other labs' programs, objects only they use) is left out. Mounted at
  the same fixed paths in the sandbox, ninja recompiles the lab's files (each is newer
  than its object) and relinks, without a compiler cache. The student's build steps run
  in the sandbox too: they see /grade/src read-only, their build folder writable, and
  nothing else of the machine's files but /usr and /etc.

So the reference of the lab's files is neither on the include path nor anywhere the
student's build or programs can read: the staged tree has the student's files where the
reference was, every object compiled from a lab file is compiled again from the student's,
and the programs and objects of the base that the student's build does not remake are not
copied.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sandbox  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
INSIDE = Path("/grade")  # where the sandbox sees the student's tree and build
INSIDE_SRC, INSIDE_CCACHE, INSIDE_RUN = INSIDE / "src", INSIDE / "ccache", INSIDE / "run"
# The build folders sit inside the tree (/grade/src/build), as build/ does in a checkout:
# the compile commands are then the same as a checkout's, so a base build finds the
# objects of the machine's own builds in the compiler cache.
# The grader's builds and the machine's (./gradlab exports the same) share compiled objects
# although their folders differ: the working folder is not part of an object's key, and
# paths inside the tree are kept relative to it.
CCACHE_SETTINGS = {"CCACHE_NOHASHDIR": "true", "CCACHE_BASEDIR": str(INSIDE_SRC)}
BUILD_TIMEOUT_S = 1800
BASE_TIMEOUT_S = 3600  # a cold base build compiles the whole core library
# Top-level entries of the repository that the staged copy leaves out: the answer key,
# the history (which holds every reference), build outputs.
NOT_STAGED = {".git", "solutions", "results", ".ci"}
# Deeper folders left out: tests/tools holds the mutants (each quotes reference lines of a
# LAB region) and the hostile submissions; the build needs neither.
NOT_STAGED_DEEP = {"tests/tools"}
NOT_STAGED_PATTERNS = [re.compile(r"build.*"), re.compile(r"__pycache__")]
MOUNT_POINTS = {"build", "build-asan"}  # empty folders of the staged tree
MIN_FREE_BYTES = 2 << 30  # a student build needs its base build's size and some room

# The two flavours of student build. The sanitizer one runs the correctness items again,
# so that a write past a buffer's end fails even where a release build does not notice.
# The sanitizer build's options, the same as ./gradlab test's sanitizer stage (it reads them
# from here), so the base finds that stage's objects in the compiler cache. -O1 with line
# tables only (-g1): a sanitizer build at -O2 -g compiles about three times slower, and
# reports need no more than file and line.
SANITIZER_OPTIONS = ["-Doptimization=1", "-Ddebug=false", "-Db_ndebug=false", "-Dcpp_args=-g1", "-Dc_args=-g1",
                     "-Db_sanitize=address,undefined", "-Db_lundef=false", "-Dwith_cuda=disabled"]
FLAVOURS = {
    "release": ["-Dbuildtype=release", "-Dsubmission_tree=true"],
    "asan": [*SANITIZER_OPTIONS, "-Dsubmission_tree=true"],
}


class SetupError(Exception):
    """A problem of the grading setup, not of the submission: exit status 3."""


def folder_name(flavour: str) -> str:
    return "build" if flavour == "release" else f"build-{flavour}"


def inside_build(flavour: str) -> Path:
    return INSIDE_SRC / folder_name(flavour)


def build_limits(jobs: int, wall_s: float) -> sandbox.Limits:
    """Compilers are big: 4 GiB each, two dozen processes per compile job (gcc, cc1plus,
    as, nvcc's helpers), no output cap that a page of template errors would reach."""
    return sandbox.Limits(cpu_s=wall_s, memory_mb=4096, processes=32 + 24 * jobs,
                          output_bytes=16 << 20, wall_s=wall_s, file_mb=2048)


def default_cache() -> Path:
    """One cache per repository checkout: its path's hash keeps checkouts apart."""
    if os.environ.get("GRADLAB_GRADE_CACHE"):  # e.g. for tests
        return Path(os.environ["GRADLAB_GRADE_CACHE"])
    key = hashlib.sha256(str(REPO.resolve()).encode()).hexdigest()[:12]
    if os.geteuid() == 0:  # the sandbox user must reach it: not under /root
        return Path("/var/cache/gradlab-grade") / key
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return home / "gradlab-grade" / key


CHECKOUT_RECORD = "checkout"  # in a default cache: the path of the checkout it serves


def make_cache(requested: Path | None) -> Path:
    cache = (requested or default_cache()).expanduser().resolve()
    if cache == REPO.resolve() or REPO.resolve() in cache.parents:
        raise SetupError(f"the grader's cache {cache} is inside the repository; give "
                         f"--cache a folder outside {REPO}")
    try:
        make_reachable(cache)
        if requested is None and not os.environ.get("GRADLAB_GRADE_CACHE"):
            hold_cache(cache)
            (cache / CHECKOUT_RECORD).write_text(f"{REPO.resolve()}\n")
            remove_orphan_caches(cache.parent, keep=cache)
    except OSError as e:
        raise SetupError(f"cannot make the grader's cache {cache} ({e.strerror}); give --cache "
                         f"a writable folder") from None
    return cache


USERS_LOCK = "users.lock"  # beside each default cache: held shared while a grader uses it
_HELD: dict[Path, object] = {}  # this process's shared holds, kept until it exits
REMOVING = ".removing-"  # a cache being deleted is first renamed to this prefix


def hold_cache(cache: Path) -> None:
    """Marks the cache as in use until this process exits (a shared lock on
    PARENT/KEY.users.lock), so that no other grader removes it meanwhile."""
    if cache in _HELD:
        return
    handle = open(cache.parent / f"{cache.name}.{USERS_LOCK}", "a")
    fcntl.flock(handle, fcntl.LOCK_SH)
    _HELD[cache] = handle


def is_orphan(cache: Path) -> bool:
    """Whether the cache records a checkout that no longer exists."""
    try:
        checkout = Path((cache / CHECKOUT_RECORD).read_text(encoding="utf-8").strip())
        return checkout.is_absolute() and not checkout.exists()
    except (OSError, ValueError):  # no record (not ours, or older), unreadable, garbage
        return False


def remove_orphan_caches(parent: Path, keep: Path) -> None:
    """Removes the default caches of checkouts that are gone: each holds base builds of
    several GiB, and a deleted clone (a CI run, a reviewer's copy) leaves its cache behind.
    A cache some grader holds (hold_cache) is left alone; so is anything this user cannot
    lock or remove. Never fails: it only tidies."""
    for cache in sorted(parent.iterdir()):
        try:
            if cache.name.startswith(REMOVING):  # an earlier removal cut short
                shutil.rmtree(cache, ignore_errors=True)
                continue
            if cache == keep or not cache.is_dir() or not is_orphan(cache):
                continue
            with open(parent / f"{cache.name}.{USERS_LOCK}", "a") as users:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError: in use
                if not is_orphan(cache):  # checked again under the lock
                    continue
                doomed = parent / f"{REMOVING}{cache.name}-{os.getpid()}"
                cache.rename(doomed)  # from here no grader finds it under its name
            (parent / f"{cache.name}.{USERS_LOCK}").unlink(missing_ok=True)
            shutil.rmtree(doomed, ignore_errors=True)
        except OSError:
            continue


def host_ccache() -> Path | None:
    """The grader's own compiler cache (warm from the machine's builds of the repository),
    which the base builds read (only read) to skip compiling what was compiled before."""
    try:
        done = subprocess.run(["ccache", "--get-config", "cache_dir"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None
    folder = Path(done.stdout.strip())
    return folder if done.returncode == 0 and folder.is_dir() else None


@contextmanager
def locked(path: Path):
    """Holds an exclusive lock on path (created) for the with-block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def make_reachable(folder: Path) -> None:
    """The sandbox user (nobody, when the grader is root) must be able to walk down to the
    folders it mounts: this folder is made 0755, and every folder above it must let others
    pass (a folder under /root does not: use /var/cache or /tmp then)."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return  # the sandbox runs as the grader's own user
    os.chmod(folder, 0o755)
    for parent in folder.parents:
        if not parent.stat().st_mode & 0o001:
            raise SetupError(f"{folder}: the sandbox user (uid {sandbox.SANDBOX_UID}) cannot "
                             f"pass {parent}; put the grader's folders elsewhere (--cache, "
                             f"--work, or GRADLAB_GRADE_CACHE under /var/cache or /tmp)")


# ---------------------------------------------------------------------------------------
# Setup checks: before anything is built


def check_out(out: Path | None) -> Path | None:
    """--out must be a file we can write outside the repository; found now, not after the
    build. Returns the resolved path."""
    if out is None:
        return None
    path = out.expanduser().resolve()
    if path.is_dir():
        raise SetupError(f"--out {out} is a folder; give the path of a file, e.g. {out}/results.json")
    if path == REPO.resolve() or REPO.resolve() in path.parents:
        raise SetupError(f"--out {out} is inside the repository ({REPO}); grading never writes "
                         f"there: give a path outside it")
    if not path.parent.is_dir():
        raise SetupError(f"--out {out}: the folder {path.parent} does not exist; create it first")
    probe = path.with_name(f".{path.name}.gradlab-probe")
    try:
        probe.write_text("probe\n")
        probe.unlink()
    except OSError as e:
        raise SetupError(f"--out {out}: cannot write in {path.parent} ({e.strerror}); "
                         f"give a writable place") from None
    return path


def check_machine(*folders: Path) -> None:
    """Can we start processes, sandbox them, and is there room on the disks we build on?"""
    try:
        subprocess.run(["true"], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SetupError(f"cannot start a process ({e}); too many processes on this machine? "
                         f"try again when fewer are running") from None
    try:
        sandbox.check()
    except sandbox.SandboxUnavailable as e:
        raise SetupError(f"no sandbox for the student's code: {e}") from None
    for folder in folders:
        existing = next(p for p in [folder, *folder.parents] if p.exists())
        free = shutil.disk_usage(existing).free
        if free < MIN_FREE_BYTES:
            raise SetupError(f"only {free >> 20} MiB free on the disk of {folder}; grading needs "
                             f"{MIN_FREE_BYTES >> 30} GiB: free some space")


# ---------------------------------------------------------------------------------------
# The trusted build


def build_env() -> dict[str, str]:
    env = dict(os.environ)
    if Path("/usr/local/cuda/bin").is_dir():
        env["PATH"] = f"/usr/local/cuda/bin{os.pathsep}{env.get('PATH', '')}"
    return env


def run_logged(argv: list[str], what: str, timeout: float) -> None:
    """Runs a trusted build step; a failure is a SetupError with its output's end."""
    try:
        done = subprocess.run(argv, env=build_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SetupError(f"{what} took longer than {timeout:g} s") from None
    except OSError as e:
        raise SetupError(f"{what}: cannot run {argv[0]}: {e}") from None
    if done.returncode != 0:
        tail = "\n".join(done.stdout.splitlines()[-40:])
        raise SetupError(f"{what} failed (exit status {done.returncode}):\n{tail}")


def trusted_build(build_dir: Path, targets: list[str], jobs: int) -> Path:
    """Configures (once) and updates the trusted build of the pristine repository."""
    if not (build_dir / "build.ninja").is_file():
        run_logged(["meson", "setup", str(build_dir), str(REPO), "-Dbuildtype=release"],
                   f"configuring the trusted build in {build_dir}", BASE_TIMEOUT_S)
    run_logged(["ninja", "-C", str(build_dir), f"-j{jobs}", *targets],
               f"building the pristine repository's {' '.join(targets)} in {build_dir}",
               BASE_TIMEOUT_S)
    return build_dir


# ---------------------------------------------------------------------------------------
# The staged tree and the student base


def is_staged(rel: str) -> bool:
    """Whether a repository path (posix, relative) belongs in the staged tree."""
    parts = rel.split("/")
    return (parts[0] not in NOT_STAGED
            and not any(rel == deep or rel.startswith(deep + "/") for deep in NOT_STAGED_DEEP)
            and not any(p.fullmatch(d) for d in parts[:-1] for p in NOT_STAGED_PATTERNS))


def tracked_files() -> list[str] | None:
    """The files git tracks in the repository (added ones included), or None where the
    repository is no git checkout (no .git): an unpacked Gradescope package, which holds
    only what was staged when it was made. A checkout whose files git cannot list is a
    setup error: walking it instead would stage whatever else lies in the folder."""
    if not (REPO / ".git").exists():
        return None
    # safe.directory: a root grader reading a checkout that another user owns
    command = ["git", "-c", f"safe.directory={REPO}", "-C", str(REPO), "ls-files", "-z", "--cached"]
    try:
        listed = subprocess.run(command, capture_output=True, check=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError) as e:
        detail = getattr(e, "stderr", b"") or b""
        raise SetupError(f"cannot list the files git tracks in {REPO} ({e}; "
                         f"{os.fsdecode(detail).strip()}): is git installed?") from None
    untracked = subprocess.run(command[:-1] + ["--others", "--exclude-standard"], capture_output=True,
                               timeout=120).stdout.split(b"\0")
    untracked = [os.fsdecode(rel) for rel in untracked if rel and is_staged(os.fsdecode(rel))]
    if untracked:  # a developer's new file, not yet added, is missing from the grading build
        shown = ", ".join(untracked[:5]) + (f" and {len(untracked) - 5} more" if len(untracked) > 5 else "")
        print(f"note: not copied for grading, as git does not track them: {shown} "
              f"(git add a file the build needs)", file=sys.stderr)
    return [os.fsdecode(rel) for rel in listed.split(b"\0") if rel]


def staged_files(lab_files: dict[str, Path]) -> dict[str, Path]:
    """Relative path in the staged tree -> the repository file it is copied from: every
    file of the repository that git tracks, but NOT_STAGED, with the lab's core files taken
    from lab_files (the handout stubs, or the submission's files). Only tracked files:
    anything else in the folder (submissions being graded, a copy of the answers, a
    Gradescope zip) must not reach a student's build, nor the next zip."""
    files: dict[str, Path] = {}
    tracked = tracked_files()
    if tracked is None:
        tracked = []
        for root, dirs, names in os.walk(REPO):
            rel_root = Path(root).relative_to(REPO)
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))
                       and is_staged((rel_root / d / "-").as_posix())]  # skips build folders whole
            tracked += [(rel_root / name).as_posix() for name in names]
    for rel in tracked:
        path = REPO / rel
        if is_staged(rel) and not path.is_symlink() and path.is_file():  # tracked, deleted: gone
            files[rel] = path
    files.update(lab_files)
    return files


def sync_tree(target: Path, files: dict[str, Path]) -> None:
    """Makes target hold exactly these files, copying only those whose content changed, with
    a fresh modification time: a source's own time may be older than the object built from
    its previous version (a checkout sets the time of the checkout), and ninja compares
    times, so only a fresh one makes it recompile exactly what changed."""
    for rel, source in files.items():
        dest = target / rel
        data = source.read_bytes()
        if dest.is_file() and dest.stat().st_size == len(data) and dest.read_bytes() == data:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        partial = dest.with_name(dest.name + ".gradlab-partial")
        partial.write_bytes(data)
        os.chmod(partial, source.stat().st_mode & 0o777 | 0o444)
        partial.replace(dest)
    for root, _, names in os.walk(target, topdown=False):
        for name in names:
            rel = (Path(root) / name).relative_to(target).as_posix()
            if rel not in files:
                (Path(root) / name).unlink()
        if Path(root) != target and not os.listdir(root) and Path(root).name not in MOUNT_POINTS:
            os.rmdir(root)
    for name in MOUNT_POINTS:  # where the build folders are mounted in the sandbox
        (target / name).mkdir(exist_ok=True)


def base_dir(cache: Path) -> Path:
    """CACHE/base: the pristine tree and its builds, shared by every lab."""
    return cache / "base"


def base_lock(cache: Path) -> Path:
    """Held while the base is updated or copied: one grading at a time touches it."""
    return cache / "base.lock"


def update_base(cache: Path, targets: list[str], flavour: str, jobs: int, log) -> Path:
    """Brings CACHE/base/{src,build*} up to date: the pristine repository (the reference of
    every lab; no solutions/, no history), with @p targets built in the sandbox. Returns the
    base folder. Call with base_lock held."""
    remove_per_lab_bases(cache, log)
    base = base_dir(cache)
    sync_tree(base / "src", staged_files({}))
    build = base / folder_name(flavour)
    build.mkdir(parents=True, exist_ok=True)
    make_reachable(base)
    mounts = dict(read_only=[(base / "src", INSIDE_SRC)], writable=[(build, inside_build(flavour))])
    env = {"CCACHE_DISABLE": "1"}
    ccache = host_ccache()
    if ccache:  # shared with the grader's own builds: it only ever sees pristine sources
        mounts["writable"].append((ccache, INSIDE_CCACHE))
        env = {"CCACHE_DIR": str(INSIDE_CCACHE), **CCACHE_SETTINGS}
    limits = build_limits(jobs, BASE_TIMEOUT_S)
    configure_and_build_base(build, flavour, targets, jobs, mounts, env, limits, log)
    return base


def remove_per_lab_bases(cache: Path, log) -> None:
    """Removes CACHE/labNN/ of the grader's earlier layout (a base per lab, about 500 MiB
    each): the shared base replaces them, nothing reads them any more."""
    for old in sorted(cache.glob("lab[0-9][0-9]")):
        if old.is_dir() and (old / "src").is_dir():
            log(f"removing {old}: a per-lab base of an earlier grader (the base is shared now)")
            shutil.rmtree(old, ignore_errors=True)
            old.with_name(old.name + ".lock").unlink(missing_ok=True)


def configured_as_submission_tree(build: Path) -> bool:
    """Whether the configured build at @p build has the option submission_tree on."""
    try:
        options = json.loads((build / "meson-info" / "intro-buildoptions.json").read_text())
    except (OSError, ValueError):
        return False
    return any(o.get("name") == "submission_tree" and o.get("value") is True for o in options)


def configure_and_build_base(build: Path, flavour: str, targets: list[str], jobs: int, mounts: dict,
                             env: dict, limits: sandbox.Limits, log) -> None:
    """meson and ninja in the sandbox, as the grader's own user (trusted sources only): the
    grader's compiler cache may be where the sandbox user cannot reach it (under /root)."""
    logs = build.parent
    if not (build / "build.ninja").is_file():
        shutil.rmtree(build)  # a half-configured folder: start again
        build.mkdir()
        setup = ["meson", "setup", str(inside_build(flavour)), str(INSIDE_SRC), *FLAVOURS[flavour]]
        result = sandbox.run(setup, **mounts, as_grader=True, limits=limits,
                             log_path=logs / f"{flavour}-setup.log", env=env, cwd=INSIDE)
        if result.returncode != 0:
            raise SetupError(f"configuring the base build ({flavour}) failed; see "
                             f"{logs / f'{flavour}-setup.log'}")
    elif not configured_as_submission_tree(build):  # a cache from before that option
        result = sandbox.run(["meson", "configure", str(inside_build(flavour)), "-Dsubmission_tree=true"],
                             **mounts, as_grader=True, limits=limits,
                             log_path=logs / f"{flavour}-setup.log", env=env, cwd=INSIDE)
        if result.returncode != 0:
            raise SetupError(f"reconfiguring the base build ({flavour}) failed; see "
                             f"{logs / f'{flavour}-setup.log'}")
    log(f"updating the base build ({flavour}) in {build} ...")
    result = sandbox.run(["ninja", "-C", str(inside_build(flavour)), f"-j{jobs}", *targets],
                         **mounts, as_grader=True, limits=limits,
                         log_path=logs / f"{flavour}-build.log", env=env, cwd=INSIDE)
    if result.returncode != 0 or result.killed_by_sandbox:
        raise SetupError(f"the base build ({flavour}) from the pristine handout failed; see "
                         f"{logs / f'{flavour}-build.log'}")


# ---------------------------------------------------------------------------------------
# The student's build


@dataclass
class StudentBuild:
    """A built (or failed) student build of one flavour, as the sandbox sees it."""

    flavour: str
    ok: bool
    errors: str  # the compiler's errors (trimmed), when not ok
    src: Path  # WORK/src, seen as /grade/src
    build: Path  # WORK/build*, seen as /grade/build*
    log: Path

    @property
    def inside(self) -> Path:
        return inside_build(self.flavour)

    def mounts(self) -> list[tuple[Path, Path]]:
        """Read-only mounts that run the student's programs: the tree and the build."""
        return [(self.src, INSIDE_SRC), (self.build, self.inside)]

    def program(self, target: str) -> Path:
        """A program of this build, e.g. tests/lab01_tests, at its path in the sandbox."""
        return self.inside / target


def stage_sources(base: Path, work: Path, student_files: dict[str, Path]) -> Path:
    """WORK/src: the base's tree with the student's files in place of the lab's reference
    files. A file that differs from the base's gets a fresh time stamp, so ninja recompiles
    exactly those."""
    src = work / "src"
    if src.exists():
        shutil.rmtree(src)
    copy_tree(base / "src", src)
    for rel, source in student_files.items():
        dest = src / rel
        if dest.is_file() and dest.read_bytes() == source.read_bytes():
            continue  # the base's own file (e.g. an untouched file): already compiled
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        os.chmod(dest, 0o644)
    return src


def copy_tree(source: Path, target: Path) -> None:
    """cp -a: times kept (ninja must see the copy as up to date), reflinks where possible."""
    done = subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(target)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise SetupError(f"cannot copy {source} to {target}: {done.stdout.strip()}")


def copy_build(base: Path, work: Path, flavour: str, targets: list[str]) -> None:
    """WORK/build*: the base build without pruned_outputs (what @p targets are not made of),
    times kept, to be updated by the student's build."""
    source = base / folder_name(flavour)
    build = work / folder_name(flavour)
    if build.exists():
        shutil.rmtree(build)
    left_out = pruned_outputs(source, targets)
    for root, _, names in os.walk(source):
        rel_root = Path(root).relative_to(source)
        (build / rel_root).mkdir(exist_ok=True)
        shutil.copystat(root, build / rel_root)
        for name in names:
            rel = (rel_root / name).as_posix()
            if rel not in left_out:
                shutil.copy2(Path(root) / name, build / rel, follow_symlinks=False)


def pruned_outputs(build: Path, targets: list[str]) -> set[str]:
    """The outputs of the base build that the student's build of @p targets neither needs nor
    remakes: everything ninja builds (objects, libraries, programs, generated sources) but
    the targets, their inputs, and build.ninja itself. Among them are the other labs'
    programs, which hold the reference of this lab's files; leaving them out keeps every
    compiled form of the reference away from the student's build and programs."""
    outputs = ninja_lines(build, ["-t", "targets", "all"])
    needed = set(targets) | set(ninja_lines(build, ["-t", "inputs", *targets]))
    pruned = set()
    for line in outputs:
        path, _, rule = line.rpartition(": ")
        if rule not in ("phony", "REGENERATE_BUILD") and path not in needed:
            pruned.add(path)
    return pruned


def ninja_lines(build: Path, argv: list[str]) -> list[str]:
    done = subprocess.run(["ninja", "-C", str(build), *argv], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SetupError(f"ninja {' '.join(argv)} in {build} failed: {done.stderr.strip()}")
    return [line for line in done.stdout.splitlines()
            if line.strip() and not line.startswith("ninja: ")]


def student_build(work: Path, flavour: str, targets: list[str], jobs: int,
                  wall_s: float = BUILD_TIMEOUT_S) -> StudentBuild:
    """Lets ninja, in the sandbox, recompile the student's files in the copied base build
    (copy_build). A compile error, or a build the sandbox had to stop, is the student's."""
    build = work / folder_name(flavour)
    log = work / f"{flavour}-build.log"
    result = sandbox.run(["ninja", "-C", str(inside_build(flavour)), f"-j{jobs}", *targets],
                         read_only=[(work / "src", INSIDE_SRC)],
                         writable=[(build, inside_build(flavour))], env={"CCACHE_DISABLE": "1"},
                         limits=build_limits(jobs, wall_s), log_path=log, cwd=INSIDE)
    made = StudentBuild(flavour, result.returncode == 0 and not result.killed_by_sandbox, "",
                        work / "src", build, log)
    if result.timed_out:
        made.errors = f"the build took longer than {wall_s:g} s"
    elif result.output_truncated:
        made.errors = "the build wrote more output than the grader reads (endless errors?)"
    elif not made.ok:
        made.errors = log.read_text(encoding="utf-8", errors="replace")
    return made
