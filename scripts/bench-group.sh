#!/usr/bin/env bash
# bench-group.sh — time from `orange task create BRANCH PROMPT --n 3` (a group of three,
# warm pool) to its three agents running in their tmux sessions, next to doing the same by
# hand three times: `git worktree add -b` of a fresh worktree plus `tmux new-session -d`
# running the agent, one after the other; and next to one `orange task create` (the
# group's members are bound at once and start side by side; the goal is at most 1.5× one
# task).
#
# The "agent" is a harness that creates a marker file as its first act; the clock stops
# when the three markers exist (polled without forking). Repository: BENCH_FILES (default
# 5000) files. Between iterations the group is cancelled (orange) or the sessions killed
# and the worktrees removed (baseline); that clean-up is not timed. The target (issue 27):
# the group costs at most 1.5× the three by hand, and at most 1.5× one task.
#
# Each iteration times the group and one task BENCH_PAIRS times (default 3), in turns:
# they take ~0.1 s where the three by hand take seconds, and a ratio of two medians of
# 20 samples each swings ±0.1 from run to run on a shared machine.
#
# Usage: scripts/bench-group.sh [--json]
# Environment: ORANGE_BIN, BENCH_ITERS (default 10), BENCH_WARMUP (default 2),
#   BENCH_PAIRS (3), BENCH_FILES (5000), BENCH_DIRS (50), BENCH_N (3), BENCH_KEEP=1
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

bench_args "$@"
iters=${BENCH_ITERS:-10}
warmup=${BENCH_WARMUP:-2}
pairs=${BENCH_PAIRS:-3}
nfiles=${BENCH_FILES:-5000}
ndirs=${BENCH_DIRS:-50}
n=${BENCH_N:-3}
bench_start=${SECONDS}

bench_build_orange "$root"
bench_project bench-group "$n" "$nfiles" "$ndirs"
sock=$BENCH_SOCK
markers="$tmp/markers"
mkdir -p "$markers" "$tmp/wt"
# The agent: marks that it runs, then idles. `:` swallows the prompt orange passes.
cat >"$ORANGE_HOME/config.toml" <<TOML
[harness.bench]
command = ": {prompt}; touch '$markers'/\"\$ORANGE_TASK_ID\"; exec sleep 600"
TOML

# A pipe nobody writes: `read -t` on it waits without a process (`sleep 0.001` is a fork
# and an exec per look — ≈ 5–12 ms each here, a CPU's worth of processes beside the starts
# being timed, and a clock that stops up to a look late).
mkfifo "$tmp/never"
exec {never}<>"$tmp/never"

# Wait until DIR holds COUNT files (a glob and a `read -t`: no process per look).
wait_count() {
    local dir=$1 want=$2 i files
    shopt -s nullglob
    for ((i = 0; i < 30000; i++)); do
        files=("$dir"/*)
        ((${#files[@]} >= want)) && return 0
        read -r -t 0.001 -u "$never" _ || true
    done
    bench_die "timed out waiting for $want files in $dir"
}

orange_iteration() {
    local mode=$1 i=$2 t0 t1 dir
    dir="$markers/o$i-$mode"
    mkdir -p "$dir"
    # Each iteration's agents mark in a directory of their own.
    sed -i "s|touch '[^']*'|touch '$dir'|" "$ORANGE_HOME/config.toml"
    bench_now t0
    "$ORANGE" task create "bench/o$i-$mode" "benchmark group $i" --n "$n" --harness bench --json >"$BENCH_STDOUT" ||
        bench_die "orange task create --n $n failed: $(cat "$BENCH_STDOUT")"
    wait_count "$dir" "$n"
    bench_now t1
    [[ $mode == record ]] && bench_record group.orange "$((t1 - t0))"
    "$ORANGE" group cancel "bench/o$i-$mode" --yes >/dev/null || bench_die "group cancel failed"
}

single_iteration() {
    local mode=$1 i=$2 t0 t1 dir
    dir="$markers/s$i-$mode"
    mkdir -p "$dir"
    sed -i "s|touch '[^']*'|touch '$dir'|" "$ORANGE_HOME/config.toml"
    bench_now t0
    "$ORANGE" task create "bench/s$i-$mode" "benchmark task $i" --harness bench --json >"$BENCH_STDOUT" ||
        bench_die "orange task create failed: $(cat "$BENCH_STDOUT")"
    wait_count "$dir" 1
    bench_now t1
    [[ $mode == record ]] && bench_record one.orange "$((t1 - t0))"
    "$ORANGE" task cancel "bench/s$i-$mode" --yes >/dev/null || bench_die "task cancel failed"
}

baseline_iteration() {
    local mode=$1 i=$2 t0 t1 k dir
    dir="$markers/b$i-$mode"
    mkdir -p "$dir"
    bench_now t0
    for ((k = 1; k <= n; k++)); do
        git -C "$repo" worktree add --quiet -b "bench/b$i-$mode/$k" "$tmp/wt/b$i-$mode-$k" origin/main
        tmux -L "$sock" new-session -d -s "bench/b$i-$mode/$k" -c "$tmp/wt/b$i-$mode-$k" \
            -e ORANGE_TASK_ID="$k" "touch '$dir'/\"\$ORANGE_TASK_ID\"; exec sleep 600"
    done
    wait_count "$dir" "$n"
    bench_now t1
    [[ $mode == record ]] && bench_record group.baseline "$((t1 - t0))"
    for ((k = 1; k <= n; k++)); do
        tmux -L "$sock" kill-session -t "=bench/b$i-$mode/$k"
        git -C "$repo" worktree remove --force "$tmp/wt/b$i-$mode-$k"
        git -C "$repo" branch -q -D "bench/b$i-$mode/$k"
    done
}

run() {
    local mode=$1 count=$2 i k
    for ((i = 1; i <= count; i++)); do
        if ((i % 2)); then orange_iteration "$mode" "$i"; baseline_iteration "$mode" "$i"
        else baseline_iteration "$mode" "$i"; orange_iteration "$mode" "$i"; fi
        single_iteration "$mode" "$i"
        # More of the group and one task, in turns: which goes first alternates.
        for ((k = 2; k <= pairs; k++)); do
            if (((i + k) % 2)); then single_iteration "$mode" "$i.$k"; orange_iteration "$mode" "$i.$k"
            else orange_iteration "$mode" "$i.$k"; single_iteration "$mode" "$i.$k"; fi
        done
    done
}
bench_log "warm-up: $warmup"
run warmup "$warmup"
bench_log "measuring: $iters"
run record "$iters"

BENCH_LABEL[group]="task create --n $n → $n agents running (warm pool) vs $n × (worktree add -b + tmux new-session)"
if ((json)); then
    bench_machine_line "$tmp" >&2
    bench_compare_json orange baseline group
else
    printf 'orange group of %s vs %s by hand — %s files, %s iterations (+%s warm-up)\n' "$n" "$n" "$nfiles" "$iters" "$warmup"
    bench_machine_line "$tmp"
    echo
    bench_compare_table orange baseline group
    echo
    echo "(the ratio is by hand / orange: at least 0.67 meets the target, orange ≤ 1.5× by hand)"
    one=$(bench_stat one.orange median)
    grp=$(bench_stat group.orange median)
    printf 'one task create: %s ms median (n=%s); the group of %s: %s ms median (n=%s), %s× one task (target ≤ 1.5×)\n' \
        "$(bench_ms "$one")" "$(bench_stat one.orange n)" "$n" "$(bench_ms "$grp")" \
        "$(bench_stat group.orange n)" "$(awk -v g="$grp" -v o="$one" 'BEGIN { printf "%.2f", g / o }')"
    echo "(total run time $((SECONDS - bench_start))s, including build and fixture)"
fi
