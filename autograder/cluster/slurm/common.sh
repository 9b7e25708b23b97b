# Shared by grade-shard.sbatch and merge.sbatch: how to run `python -m autograder` on a node.
# Set by grade-class.sh (exported into each job):
#   COURSE_DIR          the course checkout (the folder with autograder/, solutions/, notebooks/)
#   COURSE_PYTHON       the Python that has the course installed (default: python3)
#   COURSE_CONTAINER    optional: an Apptainer/Singularity image (.sif) of the grader to run instead
#   COURSE_SUBMISSIONS  SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb, on a shared file system
#   COURSE_OUT          where shard-I/ and merged/ go, on a shared file system
#   COURSE_SHARDS       K, the number of shards
#   COURSE_GRADE_ARGS   extra options for `grade` (e.g. "--memory-mb 4096 --cell-timeout 120")
set -euo pipefail
: "${COURSE_DIR:?}" "${COURSE_SUBMISSIONS:?}" "${COURSE_OUT:?}" "${COURSE_SHARDS:?}"

course_autograder() {
    if [ -n "${COURSE_CONTAINER:-}" ]; then
        # The image holds the course at /course (autograder/container/Dockerfile). Only the
        # submissions (read-only) and the output folder are bound in. Apptainer usually forbids the
        # namespaces bubblewrap needs inside it: the container is the sandbox, so grade with
        # --sandbox none there (autograder/README.md, "Grading in a container").
        local runner
        runner=$(command -v apptainer || command -v singularity)
        "$runner" exec --containall --cleanenv --no-home --pwd /course \
            --bind "$COURSE_SUBMISSIONS:$COURSE_SUBMISSIONS:ro" --bind "$COURSE_OUT:$COURSE_OUT" \
            "$COURSE_CONTAINER" python -m autograder "$@"
    else
        cd "$COURSE_DIR"
        "${COURSE_PYTHON:-python3}" -m autograder "$@"
    fi
}
