#!/usr/bin/env bash
# bench-sandbox.sh — what the bubblewrap sandbox costs at start-up: `orange task create`
# until the agent runs, with `--sandbox bwrap` and without, alternating in one run (the
# issue's goal: at most 1.3x).
#
# The "agent" is a harness that creates a marker file as its first act, with no process of
# its own: in its task's agent/ directory when there is one (in the sandbox there is, and
# only that is writable: /tmp is not shared, and a file in the workspace would be work that
# cancel keeps), else in its task's directory (unsandboxed, a first start makes no agent/
# directory); the clock stops when the marker exists (polled without forking). Between
# iterations the task is cancelled; that is not timed.
#
# Usage: scripts/bench-sandbox.sh [--json]
# Environment: ORANGE_BIN, BENCH_ITERS (default 10), BENCH_WARMUP (default 2),
#   BENCH_FILES (default 2000), BENCH_KEEP=1
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

bench_args "$@"
iters=${BENCH_ITERS:-10}
warmup=${BENCH_WARMUP:-2}
nfiles=${BENCH_FILES:-2000}
bench_start=${SECONDS}

command -v bwrap >/dev/null 2>&1 || bench_die "bwrap is not installed (apt-get install bubblewrap)"
bench_build_orange "$root"
bench_project bench-sandbox 2 "$nfiles" 20
# The agent: marks that it runs (in its task's directory, above), then idles.
cat >"$ORANGE_HOME/config.toml" <<'TOML'
[harness.bench]
command = ": {prompt}; d=\"$ORANGE_HOME/tasks/$ORANGE_PROJECT/$ORANGE_TASK_ID\"; [ -d \"$d/agent\" ] && d=\"$d/agent\"; : >\"$d/started\"; exec sleep 600"
TOML

iteration() {
    local sandbox=$1 mode=$2 i=$3 t0 t1 id
    bench_now t0
    "$ORANGE" task create "bench/$sandbox-$mode-$i" "benchmark task $i" --harness bench \
        --sandbox "$sandbox" --json >"$BENCH_STDOUT" ||
        bench_die "orange task create failed: $(cat "$BENCH_STDOUT")"
    id=$(sed -n 's/.*"id":"\([0-9a-z]*\)".*/\1/p' "$BENCH_STDOUT")
    [[ -n "$id" ]] || bench_die "no task id in: $(cat "$BENCH_STDOUT")"
    bench_wait_file "$ORANGE_HOME/tasks/bench/$id/agent/started" "$ORANGE_HOME/tasks/bench/$id/started"
    bench_now t1
    [[ $mode == record ]] && bench_record "spawn.$sandbox" "$((t1 - t0))"
    "$ORANGE" task cancel "$id" --yes >/dev/null || bench_die "cancel failed"
}

run() {
    local mode=$1 n=$2 i
    for ((i = 1; i <= n; i++)); do
        if ((i % 2)); then iteration bwrap "$mode" "$i"; iteration none "$mode" "$i"
        else iteration none "$mode" "$i"; iteration bwrap "$mode" "$i"; fi
    done
}
bench_log "warm-up: $warmup"
run warmup "$warmup"
bench_log "measuring: $iters"
run record "$iters"

BENCH_LABEL[spawn]="task create → agent running, --sandbox bwrap vs none"
if ((json)); then
    bench_machine_line "$tmp" >&2
    bench_compare_json bwrap none spawn
else
    printf 'orange task create with and without the bubblewrap sandbox — %s files, %s iterations (+%s warm-up)\n' "$nfiles" "$iters" "$warmup"
    bench_machine_line "$tmp"
    echo
    bench_compare_table bwrap none spawn
    echo
    echo "(total run time $((SECONDS - bench_start))s, including build and fixture)"
fi
