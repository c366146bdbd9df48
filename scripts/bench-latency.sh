#!/usr/bin/env bash
# bench-latency.sh — how soon orange shows what a real agent does: runs the real-client
# tests (tests/real_claude/, real_pi.rs, real_codex.rs, real_opencode.rs: each real agent
# against its stand-in model on 127.0.0.1, the monitor in the background every 500 ms, as
# orange.tmux starts it) with ORANGE_LATENCY_LOG set, and prints, per agent and moment,
# what the status line showed and how many seconds after it became true (the stand-in
# sent the reply, the test killed the agent, …), and what told orange (the agent's own
# events, or a monitor pass reading the screen or the pane).
# Goals: within 1 s where a hook says it; within one monitor pass (+ its interval) where
# only the screen or the pane tells.
# Usage: scripts/bench-latency.sh [--json] [RUNS] [AGENT...]   (RUNS: how many times the
# tests run, default 1, the table shows the median per moment; AGENT: claude, pi, codex,
# opencode, default all four). BENCH_DEBUG=1: the debug build the tests use anyway, not the
# release one (whose fat-LTO build takes long on a small machine); say which in the figures.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
json=0
runs=1
agents=()
for a in "$@"; do
    case $a in
        --json) json=1 ;;
        claude | pi | codex | opencode) agents+=("$a") ;;
        *[!0-9]* | '') echo "usage: $0 [--json] [RUNS] [claude|pi|codex|opencode ...]" >&2; exit 2 ;;
        *) runs=$a ;;
    esac
done
[[ ${#agents[@]} -gt 0 ]] || agents=(claude pi codex opencode)
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
build=(--release)
[[ ${BENCH_DEBUG:-} == 1 ]] && build=()
failed=0
for _ in $(seq "$runs"); do
    for agent in "${agents[@]}"; do
        # A failing test still leaves the moments it measured; the exit status says so.
        ORANGE_LATENCY_LOG=$log cargo test --quiet "${build[@]}" --test runner "real_$agent::" >&2 ||
            { echo "bench-latency: real_$agent:: failed" >&2; failed=1; }
    done
done
python3 - "$log" "$json" <<'PY'
import json, sys, statistics
log, as_json = sys.argv[1], sys.argv[2] == "1"
order = ["claude", "pi", "codex", "opencode"]
by = {}
for line in open(log):
    r = json.loads(line)
    by.setdefault((r.get("agent", "claude"), r["moment"]), []).append(r)
# What told orange: the signal behind the state the status line showed, as the test saw
# it in `task show` (hook: the agent's own events; screen or pane: a monitor pass, every
# 500 ms here). A moment logged without it (a figure the test measured itself): the
# moments where no agent hook tells (a dialog before the first hook, a retry on claude's
# screen, a dead pane in a rig without orange.tmux's tmux hooks).
by_pass = ("first run", "fresh HOME", "root refusal", "kill -9", "/exit", "/quit", "Esc while")
def told(agent, moment, rs):
    signals = [r.get("signal") for r in rs if r.get("signal")]
    if signals:
        s = statistics.mode(signals)
        return "hook" if s == "hook" else f"monitor pass ({s})"
    if moment.startswith(by_pass) or (agent == "claude" and "retrying" in moment):
        return "monitor pass"
    return "hook"
rows = []
for (agent, moment), rs in sorted(by.items(), key=lambda kv: (order.index(kv[0][0]) if kv[0][0] in order else 9, kv[0][1])):
    secs = statistics.median(r["seconds"] for r in rs)
    worst = max(r["seconds"] for r in rs)
    rows.append({"agent": agent, "moment": moment, "reported": rs[-1]["reported"], "seconds": round(secs, 3),
                 "max_seconds": round(worst, 3), "runs": len(rs), "told_by": told(agent, moment, rs),
                 "goal_seconds": 1.0, "within_goal": secs <= 1.0})
if as_json:
    print(json.dumps(rows, ensure_ascii=False))
    sys.exit(0)
if not rows:
    print("no moments measured", file=sys.stderr)
    sys.exit(1)
w = max(len(r["moment"]) for r in rows)
v = max(len(r["reported"]) for r in rows)
t = max(len(r["told_by"]) for r in rows)
print(f"{'agent':8}  {'moment'.ljust(w)}  {'status line shows'.ljust(v)}  {'told by'.ljust(t)}  median s  max s  runs")
print(f"{'-'*8}  {'-'*w}  {'-'*v}  {'-'*t}  --------  -----  ----")
for r in rows:
    mark = "" if r["within_goal"] else "  (median over the 1 s goal)"
    print(f"{r['agent']:8}  {r['moment'].ljust(w)}  {r['reported'].ljust(v)}  {r['told_by'].ljust(t)}  {r['seconds']:8.3f}  {r['max_seconds']:5.2f}  {r['runs']:4}{mark}")
PY
exit "$failed"
