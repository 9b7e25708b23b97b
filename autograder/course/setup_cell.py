"""The set-up cell that opens every notebook, and the one place the repository URL is configured.

A notebook opened alone in Colab (from its badge) has no course helpers installed; this cell
installs them, with the notebooks' extra packages (the ``notebooks`` extra of ``pyproject.toml``),
from the repository. Locally, where the README's quick start has installed them, it only imports
them. ``python -m autograder build`` writes this text into the first code cell of every solution
notebook and student version, so changing the URL here and rebuilding changes it everywhere (the
README's clone command and Colab badges are checked against it by ``tests/packaging/test_project_files.py``).

Until the course is published, ``REPOSITORY_URL`` is a placeholder:
``python -m autograder build --release`` refuses to build while it is one, and the cell says so in its
first line and, on Colab, installs a course wheel uploaded to the runtime (``WHEEL_GLOB``) or whatever
``COURSE_INSTALL_SOURCE`` names, instead of failing on an address that does not exist.
"""

from __future__ import annotations

import re

# The course's public repository on GitHub. Replace the placeholder with the published address
# (then rebuild, and update the README's clone command and badges: a test names any that differ).
REPOSITORY_URL = "https://github.com/transformer-course/transformer-course"
BRANCH = "main"
SETUP_GRADE_ID = "setup"

# Addresses that name no real repository; a release build refuses them.
PLACEHOLDER_URLS = frozenset({
    "https://github.com/transformer-course/transformer-course",
    "https://github.com/OWNER/REPO",
    "https://github.com/owner/repo",
})

# The pip distribution (pyproject.toml's [project] name) and the extra that holds what notebook
# cells import beyond the core dependencies; the set-up cell installs both on Colab.
DISTRIBUTION = "transformer-course"
NOTEBOOKS_EXTRA = "notebooks"

# Where the set-up cell installs from on Colab: a pip direct reference. The environment variable
# lets a test (or an offline mirror) install from a local wheel: COURSE_INSTALL_SOURCE=file:///...whl
INSTALL_SOURCE_VARIABLE = "COURSE_INSTALL_SOURCE"

_GITHUB_REPOSITORY = re.compile(r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


# On Colab before publication: a wheel of the course uploaded to the runtime's folder (/content),
# built in a copy of the course with `pip wheel --no-deps .`.
WHEEL_GLOB = DISTRIBUTION.replace("-", "_") + "-*.whl"


def published() -> bool:
    """True once ``REPOSITORY_URL`` is a real repository address (nothing for a release build to refuse)."""
    return not release_problems()


def install_source() -> str:
    """The default install source: the repository's branch, as pip's ``git+`` direct reference."""
    return f"git+{REPOSITORY_URL}@{BRANCH}"


def colab_url(notebook_path: str) -> str:
    """The 'Open in Colab' address of a notebook given by its path inside the repository."""
    owner_repo = REPOSITORY_URL.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{owner_repo}/blob/{BRANCH}/{notebook_path}"


def release_problems(url: str | None = None) -> list[str]:
    """Why ``url`` (default: ``REPOSITORY_URL``) cannot be published in a release (empty when it can)."""
    url = REPOSITORY_URL if url is None else url
    problems = []
    if url in PLACEHOLDER_URLS or url.lower() in {u.lower() for u in PLACEHOLDER_URLS}:
        problems.append(f"REPOSITORY_URL in autograder/course/setup_cell.py is the placeholder {url!r}; "
                        "set it to the course's published GitHub repository")
    elif not _GITHUB_REPOSITORY.match(url):
        problems.append(f"REPOSITORY_URL {url!r} is not a GitHub repository address "
                        "(https://github.com/<owner>/<repository>, no trailing slash or .git)")
    return problems


def _pip_failure_cause(output: str) -> str:
    """The line of pip's output that says why it failed (not an upgrade notice; colour codes removed)."""
    # pip's last line is often not the cause: "[notice] A new release of pip", or a generic
    # "ERROR: ... Check the logs". Prefer a known cause, then git's "fatal:", then pip's "ERROR:".
    causes = ("Could not resolve host", "Temporary failure in name resolution", "Name or service not known",
              "Failed to establish a new connection", "Network is unreachable", "Connection refused",
              "timed out", "No such file or directory", "does not exist", "No matching distribution",
              "Could not find a version", "Repository not found", "not found", "Permission denied",
              "No space left", "SSL", "HTTP error", "403", "404")
    generic = ("check the logs", "subprocess-exited-with-error", "did not run successfully",
               "exit code", "end of output", "see above", "lines of output")
    lines = _pip_output_lines(output)
    useful = [line for line in lines if not any(g in line.lower() for g in generic)]
    for cause in causes:
        for line in useful:
            where = line.lower().find(cause.lower())
            if where >= 0:
                return _tidy(line if len(line) <= 160 else line[where:].split("'")[0].split(")")[0])
    for prefix in ("fatal:", "ERROR:", "error:"):
        for line in reversed(useful):
            if line.startswith(prefix):
                return _tidy(line)
    return _tidy((useful or lines or ["pip failed"])[-1])


def _pip_output_lines(output: str) -> list[str]:
    """pip's output as stripped lines: colour codes, box drawing and pip's upgrade notices removed."""
    import re

    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", output or "").replace("\r", "\n")
    notices = ("[notice]", "new release of pip", "pip install --upgrade pip", "you are using pip version")
    lines = []
    for raw in text.splitlines():
        line = raw.strip().lstrip("\u2502\u2570\u2500>\u00d7 ").strip()
        if line and not any(notice in line.lower() for notice in notices):
            lines.append(line)
    return lines


def _tidy(line: str) -> str:
    for prefix in ("ERROR: ", "error: ", "fatal: "):
        if line.startswith(prefix):
            line = line[len(prefix):]
    return line if len(line) <= 300 else line[:297] + "..."


def _helper_source() -> str:
    import inspect

    return "\n\n".join(inspect.getsource(f) for f in (_pip_failure_cause, _pip_output_lines, _tidy))


# The set-up cell in three pieces, in this order: what it does (for the student), the install (the pip
# helpers above, then the function that installs on Colab, with this module's settings filled in),
# and the set-up proper (seed, device), which runs everywhere.
_CELL_HEADER = '''\
# Set-up: run this cell first.
# On Google Colab it installs the course helpers (the `utils` package) and the extra packages the
# notebooks use, from the course repository; on your own machine (after the README's quick start)
# it only imports them. It seeds the random generators and picks the device: a CUDA GPU if there
# is one (Colab: Runtime > Change runtime type > GPU), else Apple MPS, else the CPU.
'''

# The first lines of the cell while REPOSITORY_URL is a placeholder.
_CELL_UNPUBLISHED = f'''\
# NOT PUBLISHED YET: the course's repository address is a placeholder, so this cell cannot install from it.
# Run the notebooks from a copy of the course on your own machine (README: Quick start). On Colab, build
# the course's wheel in a copy (`pip wheel --no-deps .` gives {WHEEL_GLOB}), upload it to the
# Files panel, then run this cell: it installs that wheel (or the pip source in ${INSTALL_SOURCE_VARIABLE}).
'''

_CELL_SET_UP = '''\
_install_course_helpers()
del _install_course_helpers, _pip_failure_cause, _pip_output_lines, _tidy

import utils
from utils import checks

utils.seed_everything(0)
device = utils.choose_device()
print(utils.environment.describe(device))
utils.environment.warn_missing_packages()'''


def setup_cell_source() -> str:
    header = _CELL_HEADER if published() else _CELL_UNPUBLISHED + _CELL_HEADER
    return header + _helper_source() + "\n\n" + _install_function_source() + "\n\n\n" + _CELL_SET_UP


def _source_lines() -> str:
    """The lines of ``_install_course_helpers`` that decide where pip installs the course from."""
    if published():
        return f'''    source = (os.environ.get("{INSTALL_SOURCE_VARIABLE}")
              or "{install_source()}")'''
    return f'''    source = os.environ.get("{INSTALL_SOURCE_VARIABLE}")
    if not source:  # not published yet: install a wheel uploaded to this runtime
        import glob
        wheels = sorted(glob.glob("{WHEEL_GLOB}") + glob.glob("/content/{WHEEL_GLOB}"))
        if not wheels:
            raise SetupError("the course is not published yet, so there is nothing to install it from. Upload "
                             "the course's wheel ({WHEEL_GLOB}, built in a copy of the course with "
                             "`pip wheel --no-deps .`) to the Files panel and run this cell again, or set "
                             "{INSTALL_SOURCE_VARIABLE} to a pip source; or work on your own machine "
                             "(README: Quick start).")
        source = "file://" + os.path.abspath(wheels[-1])'''


def _install_function_source() -> str:
    """The set-up cell's ``_install_course_helpers``: import the helpers, or install them on Colab."""
    return f'''\
def _install_course_helpers():
    import importlib, os, subprocess, sys

    class SetupError(Exception):
        def _render_traceback_(self):  # shown by Jupyter as this one line, without a traceback
            return [f"Set-up failed: {{self}}"]

    try:
        import utils.checks  # noqa: F401 - installed already: nothing to do
        return
    except ImportError as error:
        name = error.name or "utils"
        missing = "the course helpers (`utils`)" if name.startswith("utils") else f"`{{name}}`"
    try:
        import google.colab  # noqa: F401 - only Google Colab has it
    except ImportError:
        raise SetupError(f"cannot import {{missing}} in this Python ({{sys.executable}}). From the course "
                         f"folder run `pip install -e '.[{NOTEBOOKS_EXTRA}]'` (README: Quick start), "
                         "then restart the kernel.") from None
{_source_lines()}
    print("Installing the course helpers (about a minute)...")
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-color",
                          f"{DISTRIBUTION}[{NOTEBOOKS_EXTRA}] @ {{source}}"], capture_output=True, text=True)
    if pip.returncode != 0:
        raise SetupError(f"could not install the course helpers from {{source}} "
                         f"({{_pip_failure_cause(pip.stderr + chr(10) + pip.stdout)}}). Check "
                         "that this runtime is online, or work on your own machine (README: Quick start).")
    importlib.invalidate_caches()
    for name in [name for name in sys.modules if name == "utils" or name.startswith("utils.")]:
        del sys.modules[name]'''
