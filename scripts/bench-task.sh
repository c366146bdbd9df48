#!/usr/bin/env bash
# bench-task.sh — time from `orange task create` to the agent process running in its tmux
# session (warm pool), next to doing the same by hand: `git worktree add -b` of a fresh
# worktree plus `tmux new-session -d` running the agent.
#
# The "agent" is a harness that creates a marker file as its first act; the clock stops
# when the marker exists (polled without forking). Repository: BENCH_FILES (default 5000)
# files. Between iterations the task is cancelled (orange) or the session killed and the
# worktree removed (baseline); that clean-up is not timed.
#
# Usage: scripts/bench-task.sh [--json]
# Environment: ORANGE_BIN, BENCH_ITERS (default 10), BENCH_WARMUP (default 2),
#   BENCH_FILES (5000), BENCH_DIRS (50), BENCH_KEEP=1
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

bench_args "$@"
iters=${BENCH_ITERS:-10}
warmup=${BENCH_WARMUP:-2}
nfiles=${BENCH_FILES:-5000}
ndirs=${BENCH_DIRS:-50}
bench_start=${SECONDS}

bench_build_orange "$root"
bench_project bench-task 2 "$nfiles" "$ndirs"
sock=$BENCH_SOCK
markers="$tmp/markers"
mkdir -p "$markers" "$tmp/wt"
# The agent: marks that it runs, then idles. `:` swallows the prompt orange passes.
cat >"$ORANGE_HOME/config.toml" <<TOML
[harness.bench]
command = ": {prompt}; touch '$markers'/\"\$ORANGE_TASK_ID\"; exec sleep 600"
TOML

orange_iteration() {
    local mode=$1 i=$2 t0 t1 id
    bench_now t0
    "$ORANGE" task create "bench/o$i" "benchmark task $i" --harness bench --json >"$BENCH_STDOUT" ||
        bench_die "orange task create failed: $(cat "$BENCH_STDOUT")"
    id=$(sed -n 's/.*"id":"\([0-9a-z]*\)".*/\1/p' "$BENCH_STDOUT")
    [[ -n "$id" ]] || bench_die "no task id in: $(cat "$BENCH_STDOUT")"
    bench_wait_file "$markers/$id"
    bench_now t1
    [[ $mode == record ]] && bench_record spawn.orange "$((t1 - t0))"
    "$ORANGE" task cancel "$id" --yes >/dev/null || bench_die "cancel failed"
}

baseline_iteration() {
    local mode=$1 i=$2 t0 t1
    local wt="$tmp/wt/b$i-$mode" name="bench/b$i-$mode"
    bench_now t0
    git -C "$repo" worktree add --quiet -b "$name" "$wt" origin/main
    tmux -L "$sock" new-session -d -s "$name" -c "$wt" -e ORANGE_TASK_ID="b$i-$mode" \
        "touch '$markers'/\"\$ORANGE_TASK_ID\"; exec sleep 600"
    bench_wait_file "$markers/b$i-$mode"
    bench_now t1
    [[ $mode == record ]] && bench_record spawn.baseline "$((t1 - t0))"
    tmux -L "$sock" kill-session -t "=$name"
    git -C "$repo" worktree remove --force "$wt"
    git -C "$repo" branch -q -D "$name"
}

run() {
    local mode=$1 n=$2 i
    for ((i = 1; i <= n; i++)); do
        if ((i % 2)); then orange_iteration "$mode" "$i"; baseline_iteration "$mode" "$i"
        else baseline_iteration "$mode" "$i"; orange_iteration "$mode" "$i"; fi
    done
}
bench_log "warm-up: $warmup"
run warmup "$warmup"
bench_log "measuring: $iters"
run record "$iters"

BENCH_LABEL[spawn]="task create → agent running (warm pool) vs worktree add -b + tmux new-session"
if ((json)); then
    bench_machine_line "$tmp" >&2
    bench_compare_json orange baseline spawn
else
    printf 'orange task create vs by hand — %s files, %s iterations (+%s warm-up)\n' "$nfiles" "$iters" "$warmup"
    bench_machine_line "$tmp"
    echo
    bench_compare_table orange baseline spawn
    echo
    echo "(total run time $((SECONDS - bench_start))s, including build and fixture)"
fi
