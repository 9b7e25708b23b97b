"""The set-up cell that opens every notebook, and the one place the repository URL is configured.

A notebook opened alone in Colab (from its badge) has no course helpers installed; this cell
installs them from the repository. Locally, where ``pip install -e .`` has installed them, it only
imports them. ``python -m autograder build`` writes this text into the first code cell of every
solution notebook and student version, so changing the URL here and rebuilding changes it everywhere.
"""

REPOSITORY_URL = "https://github.com/transformer-course/transformer-course"
BRANCH = "main"
SETUP_GRADE_ID = "setup"


def colab_url(notebook_path: str) -> str:
    """The 'Open in Colab' address of a notebook given by its path inside the repository."""
    owner_repo = REPOSITORY_URL.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{owner_repo}/blob/{BRANCH}/{notebook_path}"


def setup_cell_source() -> str:
    return f'''\
# Set-up: run this cell first.
# On Google Colab it installs the course helpers (the `utils` package) from the course repository;
# on your own machine (after `pip install -e .`) it only imports them. It also picks the device:
# a CUDA GPU if there is one (Colab: Runtime > Change runtime type > GPU), else Apple MPS, else the CPU.
import importlib.util
import subprocess
import sys

if "google.colab" in sys.modules and importlib.util.find_spec("utils.checks") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "git+{REPOSITORY_URL}@{BRANCH}"], check=True)

import utils
from utils import checks

utils.seed_everything(0)
device = utils.choose_device()
print(utils.environment.describe(device))'''
