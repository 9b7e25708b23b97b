"""The course side: building student versions from the solutions, the course's conventions and set-up
cell, the maintainers' `check`, the demo, and the helpers they share (nbgrader's course folder, text
from students made safe to show).
"""
