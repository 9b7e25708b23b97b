"""Instructor tooling: build student versions, autograde submissions, run the demo.

See ``autograder/README.md`` for the workflow and ``python -m autograder --help`` for the commands.
"""
