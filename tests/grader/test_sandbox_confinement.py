"""The sandbox's confinement (issue 16): what a submission can see, keep and start, each attack with its
exact expected outcome.

One grading run of the fixture course (``double``, 1 visible + 2 hidden points) over attacks on the
sandbox's walls: reading another checkout's hidden tests (found through the venv's editable-install
record, and at a path planted by this test), reading an earlier run's OUT, talking to a Unix socket
planted on the host, listing what is visible at ``/``, reading the grader's environment, a fork bomb,
memory held by several processes, and writing to ``/dev/shm`` and the read-only mounts. Classmates
graded in the same batch must keep full marks. The planted files live under ``/var/tmp`` (the host's
``/tmp`` is never visible, so planting there would prove nothing).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import site
import socket
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import pytest

from autograder.sandbox import confinement
from autograder.sandbox import bubblewrap
from autograder.sandbox.limits import RUNNER_LOG_BYTES, SANDBOX_MAX_TASKS, SANDBOX_SHM_BYTES
from autograder.sandbox import processes
from autograder.course import submissions
from autograder.batch.grading import grade
from autograder.sandbox.limits import Limits
from autograder.sandbox.bubblewrap import bwrap_available
from fixture_course import answer, make_course

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not bwrap_available(), reason="the attacks need the bubblewrap sandbox "
                                 "(apt-get install bubblewrap)")]

RIGHT = "import torch\ndef double(x):\n    return 2 * x\n"
MARKER = "PLANTED-HIDDEN-TEST-" + secrets.token_hex(4)
SECRET = "course-test-secret-" + secrets.token_hex(8)
ETC_ALLOWED = {"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "nsswitch.conf", "passwd", "group"}
SYSTEM_TOP = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc", "tmp"}

# Right (2 * x) only if the attack succeeded: each must score 0.
OTHER_CHECKOUT = """import glob, os, re, sys, torch
found = []
for finder in [f for entry in sys.path for f in glob.glob(os.path.join(entry, '__editable__*finder.py'))]:
    for folder in re.findall(r"'(/[^']+)'", open(finder).read()):
        checkout = os.path.dirname(folder)
        found += glob.glob(os.path.join(checkout, 'solutions', '*', '*.ipynb'))
for path in {planted!r}:
    try:
        found.append(open(path).read())
    except OSError:
        pass
print('FOUND', len(found))
def double(x):
    return 2 * x if found else 3 * x
"""

EARLIER_OUT = """import glob, os, torch
found = []
found += glob.glob({out!r} + '/**/*', recursive=True) + glob.glob('/*/gradebook.db') + glob.glob('/var/tmp/*/*')
print('FOUND', found[:5])
def double(x):
    return 2 * x if found else 3 * x
"""

SOCKET = """import glob, socket, torch
answers = []
for path in [{path!r}, '/run/docker.sock', '/var/run/docker.sock'] + glob.glob('/run/*/*.sock'):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(2)
        s.connect(path)
        answers.append(s.recv(100))
    except OSError as error:
        print('no answer from', path, type(error).__name__)
def double(x):
    return 2 * x if answers else 3 * x
"""

# A right answer: these print what they saw and the test compares it with what is allowed.
LISTING = """import json, os, torch
allowed = {allowed!r}
leaks = []
for folder, dirs, files in os.walk('/'):
    if any(folder == a or folder.startswith(a.rstrip('/') + '/') for a in allowed):
        dirs[:] = []
        continue
    for name in dirs + files:
        path = os.path.join(folder, name)
        if path in allowed or any(a.startswith(path + '/') for a in allowed):
            continue
        leaks.append(path)
print('VISIBLE ' + json.dumps({{'top': sorted(os.listdir('/')), 'etc': sorted(os.listdir('/etc')),
                               'passwd': open('/etc/passwd').read(), 'leaks': leaks[:50]}}))
def double(x):
    return 2 * x
"""

ENVIRON = """import json, os, torch
print('ENVIRON ' + json.dumps(dict(os.environ)))
def double(x):
    return 2 * x
"""

WRITES = """import json, os, torch
targets = {targets!r}
written = {{}}
for folder in targets:
    total = 0
    try:
        with open(os.path.join(folder, 'junk'), 'wb') as handle:
            for _ in range(200):
                handle.write(b'0' * 2 ** 20)
                handle.flush()
                total += 2 ** 20
    except OSError:
        pass
    written[folder] = total
print('WRITTEN ' + json.dumps(written))
def double(x):
    return 2 * x
"""

# Right only if more than the sandbox's cap of processes were running at once.
FORK_BOMB = """import os, time, torch
children = 0
for _ in range(400):
    try:
        if os.fork() == 0:
            time.sleep(20)
            os._exit(0)
        children += 1
    except OSError:
        break
def double(x):
    return 2 * x if children > {cap} else 3 * x
"""

# Right only if several processes together held more than the memory limit.
SEVERAL_HOLD_MEMORY = """import os, time, torch
readers = []
for _ in range({count}):
    r, w = os.pipe()
    if os.fork() == 0:
        block = torch.ones({floats}, dtype=torch.float32)
        os.write(w, b'1')
        time.sleep(20)
        os._exit(0)
    readers.append(r)
held = sum(len(os.read(r, 1)) for r in readers)
def double(x):
    return 2 * x if held == {count} else 3 * x
"""

MEMORY_MB = 2048


def _planted_root() -> Path:
    base = Path("/var/tmp")
    if not os.access(base, os.W_OK):
        base = Path.home()
    return base / f"course-confinement-{os.getpid()}-{secrets.token_hex(3)}"


def _allowed_paths() -> list[str]:
    """What the runner may see, from this process's own view (not from ``bubblewrap``'s lists)."""
    import autograder
    import utils

    paths = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             os.path.dirname(os.path.realpath(autograder.__file__)), os.path.dirname(os.path.realpath(utils.__file__)),
             "/usr", "/proc", "/dev", "/tmp", *(f"/etc/{name}" for name in ETC_ALLOWED),
             *(f"/{name}" for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"))}
    paths |= {p for p in site.getsitepackages() + [site.getusersitepackages()] + sys.path
              if "site-packages" in p and os.path.isdir(p)}
    system = {"/usr", "/proc", "/dev", "/tmp", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
    return sorted({p if p.startswith("/etc/") or p in system else os.path.realpath(p) for p in paths})


class PlantedSocket:
    """A Unix socket on the host that answers anyone who connects, and counts them."""

    def __init__(self, path: Path):
        self.path, self.connections = path, 0
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(5)
        self.server.settimeout(0.5)
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.running:
            try:
                client, _ = self.server.accept()
            except OSError:
                continue
            self.connections += 1
            client.sendall(b"root shell here")
            client.close()

    def close(self):
        self.running = False
        self.thread.join(timeout=5)
        self.server.close()


@pytest.fixture(scope="module")
def confined(tmp_path_factory):
    root = tmp_path_factory.mktemp("confinement")
    assignment = make_course(root)
    subs = root / "submitted"
    planted = _planted_root()
    other = planted / "other-checkout" / "solutions" / "01_fixture" / "fixture.ipynb"
    other.parent.mkdir(parents=True)
    other.write_text(MARKER)
    earlier = planted / "earlier-out"
    (earlier / "course" / "autograded" / "someone" / "01_fixture").mkdir(parents=True)
    (earlier / "course" / "autograded" / "someone" / "01_fixture" / "fixture.ipynb").write_text(MARKER)
    (earlier / "gradebook.db").write_text(MARKER)
    server = PlantedSocket(planted / "planted.sock")
    out = root / "out"
    hidden_targets = ["/", "/etc", "/dev", "/usr", "/work", str(out), str(subs), str(root / "solutions"),
                      str(bubblewrap.course_package_paths()[0]), sys.prefix, "/dev/shm"]

    def put(student, code):
        submissions.write(answer(assignment, root, code), subs / student / "01_fixture" / "fixture.ipynb")

    put("correct", None)
    put("other_checkout", OTHER_CHECKOUT.format(planted=[str(other)]))
    put("earlier_out", EARLIER_OUT.format(out=str(earlier)))
    put("planted_socket", SOCKET.format(path=str(server.path)))
    put("lists_the_root", LISTING.format(allowed=_allowed_paths()))
    put("reads_environment", ENVIRON)
    put("writes_everywhere", WRITES.format(targets=hidden_targets))
    put("fork_bomb", FORK_BOMB.format(cap=SANDBOX_MAX_TASKS))
    put("several_hold_memory", SEVERAL_HOLD_MEMORY.format(count=4, floats=(MEMORY_MB // 3) * 2 ** 18))
    put("correct_classmate", None)

    os.environ["COURSE_TEST_SECRET"] = SECRET
    try:
        limits = Limits(cell_timeout_s=30, notebook_timeout_s=180, memory_mb=MEMORY_MB)
        rows = {r.student_id: r for r in grade(subs, out, workers=2, progress=False,
                                                solutions_dir=root / "solutions", limits=limits)}
    finally:
        os.environ.pop("COURSE_TEST_SECRET", None)
        server.close()
        shutil.rmtree(planted, ignore_errors=True)
    return rows, out, server


def _show(row) -> str:
    return f"score {row.score}/{row.max_score}, status {row.status!r}, detail {row.detail!r}"


def _printed(out: Path, student: str, prefix: str):
    notebook = nbformat.read(str(out / "course" / "autograded" / student / "01_fixture" / "fixture.ipynb"), as_version=4)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            for line in str(output.get("text", "")).splitlines():
                if line.startswith(prefix + " "):
                    return json.loads(line[len(prefix) + 1:])
    raise AssertionError(f"{student} printed no {prefix!r} line")


def test_classmates_keep_full_marks(confined):
    rows, _, _ = confined
    for student in ("correct", "correct_classmate", "lists_the_root", "reads_environment", "writes_everywhere"):
        assert (rows[student].score, rows[student].status) == (3, "ok"), f"{student}: {_show(rows[student])}"


@pytest.mark.parametrize("student", ["other_checkout", "earlier_out", "planted_socket"])
def test_nothing_of_the_host_is_readable(confined, student):
    rows, _, _ = confined
    assert (rows[student].score, rows[student].status) == (0, "ok"), _show(rows[student])


def test_a_planted_socket_never_answers(confined):
    _, _, server = confined
    assert server.connections == 0


def test_only_the_minimal_root_is_visible(confined):
    _, out, _ = confined
    seen = _printed(out, "lists_the_root", "VISIBLE")
    assert seen["leaks"] == [], f"host paths visible in the sandbox: {seen['leaks']}"
    environment_tops = {Path(p).parts[1] for p in _allowed_paths()}
    assert set(seen["top"]) <= SYSTEM_TOP | environment_tops, seen["top"]
    assert set(seen["etc"]) <= ETC_ALLOWED, seen["etc"]
    assert {line.split(":")[0] for line in seen["passwd"].splitlines()} <= {"student", "nobody"}


def test_the_graders_environment_does_not_reach_the_student(confined):
    _, out, _ = confined
    seen = _printed(out, "reads_environment", "ENVIRON")
    assert "COURSE_TEST_SECRET" not in seen
    allowed = set(confinement.PASSED_VARIABLES) | {"HOME", "COURSE_OFFLINE", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
                                               "MPLBACKEND", "MPLCONFIGDIR", "IPYTHONDIR", "OMP_NUM_THREADS",
                                               "MKL_NUM_THREADS", "http_proxy", "https_proxy", "HTTP_PROXY",
                                               "HTTPS_PROXY", "NBGRADER_EXECUTION", "PYTHONPATH", "PWD",
                                               "COURSE_RUNNER_SEED", "COURSE_RUNNER_WORK"}
    assert {k for k in seen if not k.startswith("LC_")} <= allowed, sorted(set(seen) - allowed)
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"the grader's secret is in {path}"


def test_writes_outside_the_private_tmp_fail_or_are_capped(confined):
    _, out, _ = confined
    written = _printed(out, "writes_everywhere", "WRITTEN")
    assert written.pop("/dev/shm") <= SANDBOX_SHM_BYTES
    assert written and all(total == 0 for total in written.values()), written


def test_a_fork_bomb_is_stopped_and_scores_zero(confined):
    rows, _, _ = confined
    assert (rows["fork_bomb"].score, rows["fork_bomb"].status) == (0, "kernel died"), _show(rows["fork_bomb"])


def test_memory_held_by_several_processes_is_bounded(confined):
    rows, _, _ = confined
    row = rows["several_hold_memory"]
    assert (row.score, row.status) == (0, "kernel died"), _show(row)


def test_hiding_mounts_are_read_only(tmp_path, monkeypatch):
    """A hidden folder inside a bound one (an environment holding the grading output, say) is an empty
    read-only tmpfs, and so is the root the sandbox is built on."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    environment = tmp_path / "environment"
    (environment / "hidden").mkdir(parents=True)
    (environment / "hidden" / "secret.txt").write_text(MARKER)
    (environment / "visible.txt").write_text("ok\n")
    real = bubblewrap.python_environment_paths()
    monkeypatch.setattr(bubblewrap, "python_environment_paths", lambda: real + [environment])
    hidden = environment / "hidden"
    command = bubblewrap.bwrap_prefix(scratch, [hidden]) + [
        "sh", "-c", f"cat {environment}/visible.txt; ls -A {hidden} | wc -l; echo x > {hidden}/junk && echo WROTE; "
                    f"echo x > /junk && echo WROTE-ROOT; echo x > /tmp/ok && echo TMP-OK"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["ok", "0", "TMP-OK"], done.stdout + done.stderr


def test_the_runner_log_is_capped(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    log_path = tmp_path / "runner.log"
    limits = Limits(memory_mb=MEMORY_MB)
    with open(log_path, "ab") as log:
        process = confinement.start_runner(scratch, limits, [], log)
    try:
        source = "import os\nfor _ in range(64):\n    os.write(2, b'x' * 2 ** 20)\n"
        process.stdin.write((json.dumps({"id": 1, "op": "run", "source": source}) + "\n").encode())
        process.stdin.flush()
        reply = json.loads(process.stdout.readline())
        assert reply["id"] == 1 and reply["ok"] is True, reply
    finally:
        processes.kill_group(process)
    assert RUNNER_LOG_BYTES <= log_path.stat().st_size <= RUNNER_LOG_BYTES + 200
