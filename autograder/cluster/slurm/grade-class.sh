#!/usr/bin/env bash
# Grade a whole class on a Slurm cluster: one array task per shard, then a merge job.
#
#   autograder/cluster/slurm/grade-class.sh SUBMISSIONS OUT K [--tasks LIST] [-- GRADE OPTIONS...]
#
# SUBMISSIONS and OUT must be on a file system every node sees. Prints the two job ids. Re-run only
# the shards that failed with --tasks (e.g. --tasks 3,7): the others keep their output, and the new
# merge job merges all K again. Environment (optional):
#   COURSE_PYTHON     the Python with the course installed (default: the python3 on PATH here)
#   COURSE_CONTAINER  an Apptainer image of the grader (.sif) to run instead of COURSE_PYTHON
#   SBATCH_OPTIONS    extra sbatch options for both jobs (e.g. "--partition=short --account=cs336")
set -euo pipefail
usage() { echo "usage: $0 SUBMISSIONS OUT K [--tasks LIST] [-- GRADE OPTIONS...]" >&2; exit 2; }
[ $# -ge 3 ] || usage
submissions=$(realpath "$1"); out=$(realpath -m "$2"); shards=$3; shift 3
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || { echo "K must be a positive whole number, got '$shards'" >&2; exit 2; }
[ -d "$submissions" ] || { echo "no submissions folder at $submissions" >&2; exit 2; }
tasks="0-$((shards - 1))"
if [ "${1:-}" = "--tasks" ]; then tasks=$2; shift 2; fi
if [ "${1:-}" = "--" ]; then shift; fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
course=$(cd "$here/../../.." && pwd)
mkdir -p "$out"
export COURSE_DIR="$course" COURSE_SUBMISSIONS="$submissions" COURSE_OUT="$out" COURSE_SHARDS="$shards"
export COURSE_PYTHON="${COURSE_PYTHON:-$(command -v python3)}" COURSE_GRADE_ARGS="$*"
# shellcheck disable=SC2086
grading=$(sbatch --parsable --export=ALL --chdir="$out" --array="$tasks" ${SBATCH_OPTIONS:-} "$here/grade-shard.sbatch")
# shellcheck disable=SC2086
merging=$(sbatch --parsable --export=ALL --chdir="$out" --dependency="afterany:${grading%%;*}" ${SBATCH_OPTIONS:-} \
    "$here/merge.sbatch")
echo "grading: job array ${grading%%;*} (tasks $tasks of 0-$((shards - 1)))"
echo "merging: job ${merging%%;*} (after the array ends) -> $out/merged"
