#!/usr/bin/env bash
# bench-latency.sh — how soon orange shows what a real agent does: runs the real-client
# tests (tests/real_claude.rs: the real Claude Code against the stand-in API, the monitor
# in the background every 500 ms, as orange.tmux starts it) with ORANGE_LATENCY_LOG set,
# and prints, per moment, what the status line showed and how many seconds after it
# became true (the stand-in sent the reply, the test killed the agent, …).
# Goals: within 1 s where a hook says it; within one monitor pass (+ its interval) where
# only the screen or the pane tells.
# Usage: scripts/bench-latency.sh [--json] [RUNS]   (RUNS: how many times the tests run;
# default 1; the table shows the median per moment)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
json=0
runs=1
for a in "$@"; do
    case $a in
        --json) json=1 ;;
        *[!0-9]*) echo "usage: $0 [--json] [RUNS]" >&2; exit 2 ;;
        *) runs=$a ;;
    esac
done
# ORANGE_LATENCY_LOG, when set, keeps the raw lines (one JSON line per moment and run).
if [[ -n ${ORANGE_LATENCY_LOG:-} ]]; then
    log=$ORANGE_LATENCY_LOG
    : >"$log"
else
    log=$(mktemp "${TMPDIR:-/tmp}/orange-latency.XXXXXX")
    trap 'rm -f -- "$log"' EXIT
fi
cd "$root"
unset TMUX TMUX_PANE ORANGE_TMUX_SOCKET ORANGE_HOME
for _ in $(seq "$runs"); do
    ORANGE_LATENCY_LOG=$log cargo test --quiet --release --test runner real_claude:: >&2
done
python3 - "$log" "$json" <<'PY'
import json, sys, statistics
log, as_json = sys.argv[1], sys.argv[2] == "1"
by = {}
for line in open(log):
    r = json.loads(line)
    by.setdefault(r["moment"], []).append(r)
# Where no agent hook tells (a dialog before the first hook, a retry, a dead pane in a
# rig without orange.tmux's tmux hooks), the monitor's pass does: every 500 ms here.
by_pass = ("first run", "fresh HOME", "root refusal", "kill -9", "/exit", "Esc while")
rows = []
for moment, rs in sorted(by.items()):
    secs = statistics.median(r["seconds"] for r in rs)
    worst = max(r["seconds"] for r in rs)
    told = "monitor pass" if moment.startswith(by_pass) or "retrying" in moment else "hook"
    rows.append({"moment": moment, "reported": rs[-1]["reported"], "seconds": round(secs, 3), "max_seconds": round(worst, 3),
                 "runs": len(rs), "told_by": told, "goal_seconds": 1.0, "within_goal": secs <= 1.0})
if as_json:
    print(json.dumps(rows, ensure_ascii=False))
    sys.exit(0)
w = max(len(r["moment"]) for r in rows)
v = max(len(r["reported"]) for r in rows)
print(f"{'moment'.ljust(w)}  {'status line shows'.ljust(v)}  {'told by'.ljust(12)}  median s  max s  runs")
print(f"{'-'*w}  {'-'*v}  {'-'*12}  --------  -----  ----")
for r in rows:
    mark = "" if r["within_goal"] else "  (median over the 1 s goal)"
    print(f"{r['moment'].ljust(w)}  {r['reported'].ljust(v)}  {r['told_by'].ljust(12)}  {r['seconds']:8.3f}  {r['max_seconds']:5.2f}  {r['runs']:4}{mark}")
PY
