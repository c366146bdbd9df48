#!/usr/bin/env bash
# `cmd && count+=1 || true` is meant: an operation may fail, the soak goes on.
# shellcheck disable=SC2015
# soak.sh — bounded soak of the whole: for SOAK_SECONDS (default 60) it runs task
# create/complete/merge/cancel across 3 projects with fake agents, kills agents and orange
# processes at random (SIGKILL), runs monitor passes, then checks the invariants:
#   - no workspace is bound twice (one slot per active task, one active task per slot)
#   - every bound workspace belongs to a live (not done/cancelled) task, or to a cancelled
#     one that kept it because it holds uncommitted work
#   - every state file parses (projects, pool, every task.json)
#   - no worktree with user changes was lost (planted files are still somewhere on disk)
# Prints counts and exits non-zero when an invariant fails.
#
# Usage: scripts/soak.sh    Environment: ORANGE_BIN, SOAK_SECONDS (60), SOAK_SEED, SOAK_KEEP=1
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

seconds=${SOAK_SECONDS:-60}
RANDOM=${SOAK_SEED:-$$}
command -v python3 >/dev/null || bench_die "python3 is needed for the invariant checks"
bench_build_orange "$root"
sock="orange-soak-$$"
bench_workspace soak "$sock"
export ORANGE_HOME="$tmp/home"
export ORANGE_LOCK_TIMEOUT=60s
mkdir -p "$ORANGE_HOME" "$tmp/planted"
agent="$root/tests/fixtures/fake-agent.sh"
{
    for mode in complete wait fail exit0; do
        printf '[harness.soak-%s]\ncommand = "sh %s %s {prompt}"\n' "$mode" "$agent" "$mode"
    done
    printf '[policy]\nidle_grace = "2s"\n'
} >"$ORANGE_HOME/config.toml"
PATH="$(dirname "$ORANGE"):$PATH" tmux -L "$sock" -f /dev/null new-session -d -s keepalive

projects=(alpha beta gamma)
for p in "${projects[@]}"; do
    repo=$(bench_make_repo "$tmp/$p" 50 5)
    "$ORANGE" project add "$repo" --name "$p" --pool-size 3 >/dev/null
done

o() { "$ORANGE" "$@" 2>/dev/null; }
pick() { local a=("$@"); printf '%s' "${a[RANDOM % ${#a[@]}]}"; }
task_ids() { o task list --all --json | python3 -c 'import json,sys; print("\n".join(t["id"] for t in json.load(sys.stdin) if t["status"] not in ("done","cancelled")))'; }

declare -i ops=0 kills_agent=0 kills_orange=0 creates=0 merges=0 cancels=0 planted=0 passes=0
end=$((SECONDS + seconds))
declare -i n=0
while ((SECONDS < end)); do
    n+=1
    p=$(pick "${projects[@]}")
    case $((RANDOM % 10)) in
    0 | 1 | 2)
        o task create "soak/$p-$n" "soak task $n" --project "$p" --harness "soak-$(pick complete wait fail exit0)" >/dev/null && creates+=1 || true
        ;;
    3)
        id=$(task_ids | shuf -n 1 || true)
        [[ -n "$id" ]] && o task merge "$id" --local >/dev/null && merges+=1 || true
        ;;
    4)
        id=$(task_ids | shuf -n 1 || true)
        if [[ -n "$id" ]]; then
            # Plant a user change first: cancel must keep it.
            ws=$(o task show "$id" --json | python3 -c 'import json,sys; print(json.load(sys.stdin).get("workspace") or "")')
            if [[ -n "$ws" && -d "$ORANGE_HOME/workspaces/$ws" ]]; then
                echo "precious $n" >"$ORANGE_HOME/workspaces/$ws/planted-$n.txt"
                echo "$ws/planted-$n.txt" >>"$tmp/planted/list"
                planted+=1
            fi
            o task cancel "$id" --yes >/dev/null && cancels+=1 || true
        fi
        ;;
    5)
        # SIGKILL a random agent.
        pid=$(tmux -L "$sock" list-panes -a -F '#{session_name} #{pane_pid} #{pane_dead}' | awk '$1 != "keepalive" && $3 == 0 { print $2 }' | shuf -n 1 || true)
        [[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null && kills_agent+=1 || true
        ;;
    6)
        # SIGKILL an orange process mid-operation.
        o task create "soak/k-$p-$n" "killed $n" --project "$p" --harness soak-wait >/dev/null &
        victim=$!
        sleep "0.0$((RANDOM % 9))"
        kill -9 "$victim" 2>/dev/null && kills_orange+=1 || true
        wait "$victim" 2>/dev/null || true
        ;;
    7)
        o monitor --once >/dev/null && passes+=1 || true
        ;;
    8)
        o workspace gc --project "$p" >/dev/null || true
        ;;
    9)
        id=$(task_ids | shuf -n 1 || true)
        [[ -n "$id" ]] && o task respawn "$id" >/dev/null || true
        ;;
    esac
    ops+=1
done

echo "soak: ${seconds}s, $ops operations: $creates creates, $merges merges, $cancels cancels, $passes monitor passes, $kills_agent agents and $kills_orange orange processes killed (SIGKILL), $planted user changes planted"

export SOAK_PLANTED="$tmp/planted/list"
python3 - "$ORANGE_HOME" <<'PY'
import json, os, sys, glob, subprocess
home = sys.argv[1]
failures = []
def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:
        failures.append(f"{path} does not parse: {e}")
        return None
projects = load(os.path.join(home, "projects.json"))
pool = load(os.path.join(home, "workspaces/.pool.json")) or {"workspaces": {}}
tasks = {}
for p in glob.glob(os.path.join(home, "tasks/*/*/task.json")):
    t = load(p)
    if t:
        tasks[(t["project"], t["id"])] = t
active = {k: t for k, t in tasks.items() if t["status"] not in ("done", "cancelled", "pending")}
# One active task per workspace, and the pool agrees.
holders = {}
for (proj, tid), t in active.items():
    ws = t.get("workspace")
    if ws:
        if ws in holders:
            failures.append(f"workspace {ws} held by tasks {holders[ws]} and {tid}")
        holders[ws] = tid
for name, slot in pool["workspaces"].items():
    if slot["status"] == "creating":
        continue  # a killed create; healed by the next command
    if slot["status"] == "bound":
        label = slot.get("task")
        t = tasks.get((slot.get("project") or name.rsplit("--", 1)[0], label))
        if t is None:
            failures.append(f"{name} is bound to {label!r}, which is no task")
        elif t["status"] == "done":
            failures.append(f"{name} is bound to task {label} which is done")
        elif t["status"] in ("cancelled", "pending"):
            # Allowed only while it holds uncommitted work (cancel keeps it: nothing lost),
            # or, for pending, until the next gc (a spawn killed half-way).
            path = slot.get("path") or os.path.join(home, "workspaces", name)
            dirty = subprocess.run(["git", "-C", path, "status", "--porcelain"], capture_output=True, text=True).stdout.strip()
            if t["status"] == "cancelled" and not dirty:
                failures.append(f"{name} is bound to cancelled task {label} without uncommitted work")
for ws, tid in holders.items():
    slot = pool["workspaces"].get(ws)
    if not slot or slot["status"] != "bound" or slot.get("task") != tid:
        failures.append(f"task {tid} says it holds {ws}, the pool says {slot}")
# Planted user changes: still in their workspace, or the workspace is still bound.
lost = 0
if os.path.exists(os.environ["SOAK_PLANTED"]):
    for line in open(os.environ["SOAK_PLANTED"]):
        rel = line.strip()
        if not os.path.exists(os.path.join(home, "workspaces", rel)):
            lost += 1
            failures.append(f"planted user change {rel} was lost")
bound = sum(1 for s in pool["workspaces"].values() if s["status"] == "bound")
print(f"invariants: {len(tasks)} tasks ({len(active)} active), {len(pool['workspaces'])} workspaces ({bound} bound), {lost} user changes lost, {len(failures)} failures")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
PY
