#!/usr/bin/env bash
# bench-footprint.sh — what reading each agent's memory and CPU costs a monitor pass:
# `orange monitor --once` over N (default 50) live task sessions with the reading on
# (every `--once` pass reads, as a running monitor's first pass does; it then reads every
# 10 s) against the same sessions with it off (ORANGE_USAGE=0), in the same run. First
# without limits (one read of /proc for every agent), then — where `orange doctor` names
# a cgroup mechanism — with every task respawned under `--memory 1G` (each agent's cgroup
# files). Also the agent.json writes of those passes (the reading writes only
# agent/footprint.json, and only when what it shows changes).
#
# With BENCH_BEFORE_BIN (an orange from before, e.g. one that read /proc at every pass and
# kept the usage in agent.json), its passes over the same sessions too.
#
# Usage: scripts/bench-footprint.sh [--json]
# Environment: ORANGE_BIN, BENCH_BEFORE_BIN, BENCH_TASKS (50), BENCH_ITERS (15), BENCH_KEEP=1
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

bench_args "$@"
ntasks=${BENCH_TASKS:-50}
iters=${BENCH_ITERS:-15}

bench_build_orange "$root"
sock="orange-bench-footprint-$$"
bench_workspace bench-footprint "$sock"

repo=$(bench_make_repo "$tmp" 50 5)
tmux -L "$sock" -f /dev/null new-session -d -s keepalive
# An agent that prints now and then and otherwise waits: a shell and a sleep per tree.
cat >"$ORANGE_HOME/config.toml" <<'TOML'
[harness.bench]
command = ": {prompt}; while :; do echo working; sleep 30; done"
[policy]
idle_grace = "1h"
TOML
cd "$repo"
"$ORANGE" project add "$repo" --name bench --pool-size "$ntasks" >&2
bench_log "starting $ntasks task sessions"
ids=()
for ((i = 1; i <= ntasks; i++)); do
    "$ORANGE" task create "bench/t$i" "task $i" --harness bench --json >"$tmp/created.json"
    ids+=("$(grep -o '"id":"[^"]*"' "$tmp/created.json" | head -n 1 | cut -d '"' -f 4)")
done

# agent.json files written by one pass of BIN: their modification times before and after.
agent_writes() {
    local bin=$1 before after
    before=$(find "$ORANGE_HOME/tasks" -name agent.json -printf '%T@ %p\n' | sort)
    "$bin" monitor --once >/dev/null
    after=$(find "$ORANGE_HOME/tasks" -name agent.json -printf '%T@ %p\n' | sort)
    comm -13 <(echo "$before") <(echo "$after") | grep -c . || true
}

# The pass's own time as the monitor reports it (`pass_ms`, without the process's start),
# in ns.
pass_ns() {
    ms_field pass_ms
}

# A field in ms of the pass's report (`pass_ms`, `footprint_ms`), in ns.
ms_field() {
    grep -o "\"$1\":[0-9.e-]*" "$BENCH_STDOUT" | cut -d: -f2 | awk '{ printf "%d\n", $1 * 1000000 }'
}

# Passes with the reading off and on, alternated: samples pass.<label>_off / _on.
measure() {
    local label=$1 i t
    ORANGE_USAGE=0 "$ORANGE" monitor --once >/dev/null # warm-up
    "$ORANGE" monitor --once >/dev/null
    for ((i = 1; i <= iters; i++)); do
        bench_time t env ORANGE_USAGE=0 "$ORANGE" monitor --once --json || bench_die "monitor pass failed"
        bench_record "pass.${label}_off" "$t"
        bench_record "inpass.${label}_off" "$(pass_ns)"
        bench_time t "$ORANGE" monitor --once --json || bench_die "monitor pass failed"
        bench_record "pass.${label}_on" "$t"
        bench_record "inpass.${label}_on" "$(pass_ns)"
        # The read itself, timed inside the same pass: the share of it, free of the
        # machine's noise between passes.
        bench_record "read.$label" "$(ms_field footprint_ms)"
    done
    # The orange from before, on its own (it keeps the usage in agent.json, which this
    # one's passes would rewrite without it): a warm-up, then its passes.
    if [[ $label == proc && -n ${BENCH_BEFORE_BIN:-} ]]; then
        "$BENCH_BEFORE_BIN" monitor --once >/dev/null
        for ((i = 1; i <= iters; i++)); do
            bench_time t "$BENCH_BEFORE_BIN" monitor --once || bench_die "monitor pass (before) failed"
            bench_record "pass.${label}_before" "$t"
        done
    fi
}

bench_log "no limits (/proc): $iters passes each"
measure proc
proc_writes=$(agent_writes "$ORANGE")
before_writes=n/a
if [[ -n ${BENCH_BEFORE_BIN:-} ]]; then
    "$BENCH_BEFORE_BIN" monitor --once >/dev/null
    before_writes=$(agent_writes "$BENCH_BEFORE_BIN")
    "$ORANGE" monitor --once >/dev/null
fi
"$ORANGE" task list --json >"$tmp/list.json"
read_n=$(grep -o '"usage":{' "$tmp/list.json" | grep -c . || true)
((read_n == ntasks)) || bench_die "usage read for $read_n of $ntasks tasks"

# The resources check's detail starts with the mechanism's name (`cgroup-v1: …`).
mechanism=$("$ORANGE" doctor --json | grep -o '"detail":"[^"]*","name":"resources"' | sed 's/^"detail":"\([a-z0-9-]*\):.*/\1/' || true)
cgroup=0
if [[ $mechanism == cgroup* ]]; then
    cgroup=1
    bench_log "respawning every task under --memory 1G ($mechanism)"
    for id in "${ids[@]}"; do
        "$ORANGE" task respawn "$id" --force --yes --memory 1G >/dev/null
    done
    bench_log "limits (cgroup files): $iters passes each"
    measure cgroup
    cgroup_writes=$(agent_writes "$ORANGE")
    "$ORANGE" task list --json >"$tmp/list.json"
    in_cg=$(grep -o '"cgroup":true' "$tmp/list.json" | grep -c . || true)
    ((in_cg == ntasks)) || bench_die "read from a cgroup for $in_cg of $ntasks tasks"
    for id in "${ids[@]}"; do "$ORANGE" task cancel "$id" --yes >/dev/null; done
    "$ORANGE" monitor --once >/dev/null # its sweep removes what cancel could not yet
fi

# The read inside the pass (footprint_ms) against the whole pass (pass_ms), medians.
share() {
    local r p
    r=$(bench_stat "read.$1" median)
    p=$(bench_stat "inpass.${1}_on" median)
    printf 'the read inside the pass: median %s ms of %s ms (%s%%), p90 %s ms\n' "$(bench_ms "$r")" "$(bench_ms "$p")" \
        "$(awk -v r="$r" -v p="$p" 'BEGIN { printf "%.1f", p ? 100 * r / p : 0 }')" "$(bench_ms "$(bench_stat "read.$1" p90)")"
}

BENCH_LABEL[pass]="one monitor pass, $ntasks sessions: memory and CPU read vs not"
BENCH_LABEL[inpass]="the same, the pass alone (pass_ms: no process start)"
if ((json)); then
    bench_machine_line "$tmp" >&2
    bench_compare_json proc_on proc_off pass inpass | sed "s/}}\$/,\"agent_json_writes_per_pass\":$proc_writes,\"read_median_ms\":$(bench_ms "$(bench_stat read.proc median)")}}/"
    if [[ -n ${BENCH_BEFORE_BIN:-} ]]; then
        bench_compare_json proc_on proc_before pass | sed "s/}}\$/,\"before_agent_json_writes_per_pass\":\"$before_writes\"}}/"
    fi
    if ((cgroup)); then
        bench_compare_json cgroup_on cgroup_off pass inpass | sed "s/}}\$/,\"agent_json_writes_per_pass\":$cgroup_writes,\"mechanism\":\"$mechanism\",\"read_median_ms\":$(bench_ms "$(bench_stat read.cgroup median)")}}/"
    fi
else
    printf 'orange monitor --once, %s live sessions, %s iterations: usage read (on) vs ORANGE_USAGE=0 (off)\n' "$ntasks" "$iters"
    bench_machine_line "$tmp"
    echo
    echo "without limits: one read of /proc for all agents"
    bench_compare_table proc_on proc_off pass inpass
    printf 'agent.json files written by a pass: %s\n' "$proc_writes"
    share proc
    if [[ -n ${BENCH_BEFORE_BIN:-} ]]; then
        echo
        echo "the same passes against BENCH_BEFORE_BIN ($BENCH_BEFORE_BIN)"
        bench_compare_table proc_on proc_before pass
        printf 'agent.json files written by a pass of it: %s\n' "$before_writes"
    fi
    if ((cgroup)); then
        echo
        echo "under --memory 1G ($mechanism): each agent's cgroup files"
        bench_compare_table cgroup_on cgroup_off pass inpass
        printf 'agent.json files written by a pass: %s\n' "$cgroup_writes"
        share cgroup
    fi
fi
