#!/usr/bin/env bash
# bench-status.sh — cost of the status-line widget, `orange status --format tmux`, with 100
# tasks across 5 projects, next to a bare `tmux display -p '#{session_name}'` on the same
# server (the cheapest thing a status line can run). Goal: within 2x of the bare tmux call.
#
# Fixture: 5 projects × 20 task.json files written directly (12 working, 1 clarification,
# 2 reviewing, 1 stuck with live sessions; 2 whose agent exited 3; 1 pending; 1 done), and
# a private tmux server holding the 78 sessions (agents are `sleep`). Measured, interleaved:
#   status        `orange status --format tmux` as a status line calls it (cache warm)
#   status-cold   the same with run/status-cache.json removed first (one tmux snapshot)
#   publish       `orange hook refresh` with nothing changed (snapshot + compare options)
# each next to its own run of the bare tmux call.
#
# Usage: scripts/bench-status.sh [--json]
# Environment: ORANGE_BIN, BENCH_ITERS (default 200), BENCH_WARMUP (default 10),
#   BENCH_KEEP=1
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

bench_args "$@"
iters=${BENCH_ITERS:-200}
warmup=${BENCH_WARMUP:-10}
bench_start=${SECONDS}

command -v tmux >/dev/null || bench_die "tmux not found"
bench_build_orange "$root"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/orange-bench-status.XXXXXX")
sock="orange-bench-status-$$"
cleanup() {
    local rc=$?
    tmux -L "$sock" kill-server 2>/dev/null || true
    cd / || true
    if [[ "${BENCH_KEEP:-0}" == 1 ]]; then bench_log "kept $tmp"; else rm -rf -- "$tmp"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export ORANGE_HOME="$tmp/orange-home"
export ORANGE_TMUX_SOCKET="$sock"
unset TMUX TMUX_PANE
BENCH_STDOUT="$tmp/cmd.out"
BENCH_STDERR="$tmp/cmd.err"
bench_init_samples "$tmp/samples"

tmux -L "$sock" -f /dev/null new-session -d -s keepalive -x 200 -y 50

# task_json FILE ID PROJECT BRANCH STATUS SESSION SESSION_ID: one task.json (the fields
# orange writes; null session when SESSION is empty).
task_json() {
    local file=$1 id=$2 project=$3 branch=$4 status=$5 sess=$6 sid=$7 s_json sid_json ws
    if [[ -n "$sess" ]]; then
        s_json="\"$sess\"" sid_json="\"$sid\"" ws="\"$project--$id\""
    else
        s_json=null sid_json=null ws=null
    fi
    mkdir -p "$(dirname "$file")"
    cat >"$file" <<JSON
{
  "id": "$id",
  "project": "$project",
  "branch": "$branch",
  "harness": "bench",
  "status": "$status",
  "workspace": $ws,
  "tmux_session": $s_json,
  "tmux_session_id": $sid_json,
  "summary": "benchmark task $id of $project",
  "created_at": "2026-01-01T00:00:00.$(printf '%06d' "$RANDOM")Z",
  "updated_at": "2026-01-01T00:00:00Z",
  "crash_count": 0
}
JSON
}

# new_session NAME COMMAND: a detached session kept after its program exits (as orange
# makes them); prints its id.
new_session() {
    tmux -L "$sock" new-session -d -P -F '#{session_id}' -s "$1" -x 120 -y 30 "$2" \; \
        set-option -w -t "=$1:" remain-on-exit on
}

bench_log "writing 100 tasks across 5 projects and starting their sessions"
n=0
for p in alpha beta gamma delta epsilon; do
    for ((i = 0; i < 20; i++)); do
        n=$((n + 1))
        printf -v id 't%05d' "$n"
        case $i in
        0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11) status=working kind=live ;;
        12) status=clarification kind=live ;;
        13 | 14) status=reviewing kind=live ;;
        15) status=stuck kind=live ;;
        16 | 17) status=working kind=exited ;;
        18) status=pending kind=none ;;
        *) status="done" kind=none ;;
        esac
        sess="" sid=""
        case $kind in
        live)
            sess="$p/feat-$id"
            sid=$(new_session "$sess" "exec sleep 3600")
            ;;
        exited)
            sess="$p/feat-$id"
            sid=$(new_session "$sess" "exit 3")
            ;;
        esac
        task_json "$ORANGE_HOME/tasks/$p/$id/task.json" "$id" "$p" "feat-$id" "$status" "$sess" "$sid"
    done
done
# Task files must be older than the snapshot the cache trusts (see src/ui/status.rs).
sleep 0.2

expected=$("$ORANGE" status --format json)
case $expected in
*'"working":60'*'"dead":10'* | *'"dead":10'*'"working":60'*) ;;
*) bench_die "unexpected counts (is every session up?): $expected" ;;
esac
bench_log "counts: $("$ORANGE" status --format plain | head -n 1)"

one() {
    local mode=$1 measure=$2 t
    shift 2
    bench_time t "$@" || bench_die "failed: $*"
    [[ $mode == record ]] && bench_record "$measure" "$t"
    return 0
}

base() {
    one "$1" "$2.tmux" tmux -L "$sock" display -p '#{session_name}'
}

iteration() {
    local mode=$1
    base "$mode" status
    one "$mode" status.orange "$ORANGE" status --format tmux
    rm -f "$ORANGE_HOME/run/status-cache.json"
    one "$mode" status-cold.orange "$ORANGE" status --format tmux
    base "$mode" status-cold
    one "$mode" publish.orange "$ORANGE" hook refresh
    base "$mode" publish
}

run() {
    local mode=$1 k=$2 i
    for ((i = 0; i < k; i++)); do iteration "$mode"; done
}
bench_log "warm-up: $warmup"
run warmup "$warmup"
bench_log "measuring: $iters"
run record "$iters"

ratio_x() { # ours/base as "1.23"
    awk -v b="$1" -v o="$2" 'BEGIN { if (b <= 0) print "n/a"; else printf "%.2f\n", o / b }'
}
om=$(bench_stat status.orange median)
bm=$(bench_stat status.tmux median)
verdict="met"
awk -v b="$bm" -v o="$om" 'BEGIN { exit !(o <= 2 * b) }' || verdict="NOT met"

BENCH_LABEL["status"]="orange status --format tmux (cache warm)"
BENCH_LABEL["status-cold"]="orange status --format tmux (no cache: 1 snapshot)"
BENCH_LABEL["publish"]="orange hook refresh (publish, nothing changed)"
if ((json)); then
    bench_machine_line "$tmp" >&2
    bench_compare_json orange tmux status status-cold publish
else
    printf 'orange status vs tmux display -p — 100 tasks, 5 projects, 78 sessions, %s iterations (+%s warm-up)\n' \
        "$iters" "$warmup"
    bench_machine_line "$tmp"
    echo
    bench_compare_table orange tmux status status-cold publish
    echo
    printf 'goal: orange status within 2x of the bare tmux call: %sx → %s\n' "$(ratio_x "$bm" "$om")" "$verdict"
    echo "(total run time $((SECONDS - bench_start))s, including build and fixture)"
fi
