#!/usr/bin/env bash
# bench-monitor.sh — one `orange monitor --once` pass over N (default 50) live task
# sessions: median time and the number of processes it spawns (counted with strace), next
# to claude-squad's approach of one `tmux capture-pane` per session, run here for the same
# sessions.
#
# Usage: scripts/bench-monitor.sh [--json]
# Environment: ORANGE_BIN, BENCH_TASKS (50), BENCH_ITERS (15), BENCH_KEEP=1
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

bench_args "$@"
ntasks=${BENCH_TASKS:-50}
iters=${BENCH_ITERS:-15}
command -v strace >/dev/null || bench_die "strace is needed to count processes (apt-get install strace)"

bench_build_orange "$root"
sock="orange-bench-monitor-$$"
bench_workspace bench-monitor "$sock"

repo=$(bench_make_repo "$tmp" 200 10)
tmux -L "$sock" -f /dev/null new-session -d -s keepalive
mkdir -p "$ORANGE_HOME"
# An agent that prints now and then and otherwise waits (a live pane to watch).
cat >"$ORANGE_HOME/config.toml" <<'TOML'
[harness.bench]
command = ": {prompt}; while :; do echo working; sleep 30; done"
[policy]
idle_grace = "1h"
TOML
cd "$repo"
"$ORANGE" project add "$repo" --name bench --pool-size "$ntasks" >&2
bench_log "starting $ntasks task sessions"
for ((i = 1; i <= ntasks; i++)); do
    "$ORANGE" task create "bench/t$i" "task $i" --harness bench >/dev/null
done
live=$(tmux -L "$sock" list-sessions -F '#{session_name}' | grep -c '^bench/')
((live == ntasks)) || bench_die "only $live of $ntasks sessions are live"
sessions=()
while IFS= read -r s; do sessions+=("$s"); done < <(tmux -L "$sock" list-sessions -F '#{session_name}' | grep '^bench/')

capture_all() {
    local s
    for s in "${sessions[@]}"; do tmux -L "$sock" capture-pane -p -t "=$s:" >/dev/null; done
}

bench_log "measuring: $iters iteration(s)"
"$ORANGE" monitor --once >/dev/null # warm-up (first pass writes agent.json files)
for ((i = 1; i <= iters; i++)); do
    bench_time t "$ORANGE" monitor --once || bench_die "monitor pass failed"
    bench_record pass.orange "$t"
    bench_time t capture_all || bench_die "capture-pane failed"
    bench_record pass.baseline "$t"
done

# Processes spawned by one pass: execve calls in the traced tree, minus orange itself.
strace -f -qq -e trace=execve -o "$tmp/strace.out" "$ORANGE" monitor --once >/dev/null
# (failed execve attempts along PATH are not processes: count the successful ones)
procs=$(($(grep -c 'execve(.*) = 0' "$tmp/strace.out") - 1))
baseline_procs=$ntasks

BENCH_LABEL[pass]="one monitor pass over $ntasks live sessions vs $ntasks capture-panes"
if ((json)); then
    bench_machine_line "$tmp" >&2
    bench_compare_json orange baseline pass | sed "s/}}\$/,\"orange_processes\":$procs,\"baseline_processes\":$baseline_procs}}/"
else
    printf 'orange monitor pass vs one capture-pane per session — %s live task sessions, %s iterations\n' "$ntasks" "$iters"
    bench_machine_line "$tmp"
    echo
    bench_compare_table orange baseline pass
    echo
    printf 'processes spawned by one pass: orange %s, capture-pane approach %s\n' "$procs" "$baseline_procs"
    grep 'execve(.*) = 0' "$tmp/strace.out" | sed -n '2,$p' | sed 's/^[0-9]* *execve("\([^"]*\)".*/  \1/' | sort | uniq -c
fi
