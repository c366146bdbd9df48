#!/usr/bin/env bash
# `cmd && count+=1 || true` is meant: an operation may fail, the soak goes on; awk programs
# are in single quotes on purpose.
# shellcheck disable=SC2015,SC2016
# soak.sh — the long-running version of the suite's kill loop. For SOAK_SECONDS (default 60)
# it runs random operations across 3 projects (3 workspaces each) with fake agents:
#   task create (spawn) · task create --no-spawn then task spawn · task merge --local ·
#   task cancel --yes · task respawn · task delete --yes (done/cancelled/failed tasks) ·
#   workspace acquire --task LABEL / workspace release NAME · lane create / lane close
#   --force · monitor --once · workspace gc
# Any of them is, at random (~40%), started in the background and SIGKILLed after 0–90 ms,
# or (~10%) run with ORANGE_CRASH_AT at one of its fault points; agents are SIGKILLed too.
# After each killed operation the next command (`orange task list --all --json`) must
# succeed, then the invariants must hold (also checked every few operations and at the end):
#   - every state file parses (projects, pool, every task.json, the lane registry)
#   - no workspace is bound twice: an active task names a workspace the pool binds to it
#   - no workspace is bound to a pending, failed or done task; one bound to a cancelled
#     task holds uncommitted work (cancel keeps it then)
#   - every agent session (@orange_task) belongs to an active task whose record names that
#     very session; every lane session (@orange_lane) to a lane that is not closed; no lane
#     is left `creating`
#   - no user change is lost (files planted in workspaces before cancels and merges are
#     still there, or where the soak's "user" moved them to free the workspace)
# Prints counts and exits non-zero when an invariant fails; each violation is printed with
# the operations that led to it (the whole log is $tmp/ops.log, kept with SOAK_KEEP=1).
#
# Usage: scripts/soak.sh    Environment: ORANGE_BIN, SOAK_SECONDS (60), SOAK_SEED, SOAK_KEEP=1
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# (Followed with `shellcheck -x`, as scripts/test.sh runs it.)
# shellcheck source=scripts/lib-bench.sh disable=SC1091
. "$script_dir/lib-bench.sh"
tmp="" # bench_workspace sets it

seconds=${SOAK_SECONDS:-60}
seed=${SOAK_SEED:-$$}
RANDOM=$seed
command -v python3 >/dev/null || bench_die "python3 is needed for the invariant checks"
command -v setsid >/dev/null || bench_die "setsid (util-linux) is needed to kill operations"
command -v pgrep >/dev/null || bench_die "pgrep (procps) is needed to kill operations"
# The interpreter itself, not a version manager's shim: it runs after every kill.
py=$(python3 -c 'import sys; print(sys.executable)')
ulimit -c 0 2>/dev/null || true # ORANGE_CRASH_AT aborts: no core files
bench_build_orange "$root"
sock="orange-soak-$$"
bench_workspace soak "$sock"
export ORANGE_HOME="$tmp/home"
export ORANGE_LOCK_TIMEOUT=60s
mkdir -p "$ORANGE_HOME" "$tmp/planted" "$tmp/rescued"
: >"$tmp/planted/list"
log="$tmp/ops.log"
: >"$log"
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
cd "$tmp"

# ---------------------------------------------------------------------------------------
# What the state is now (read from the files, no orange command): one line per thing.
#   T <id> <status> <project> <workspace|->
#   W <name> <project> <label> <kind> <path>   a bound workspace; kind: the status of its
#                                               task, ext (an outside label) or ghost (a
#                                               label that is no task)
#   L <lane id> <state> <project>
# ---------------------------------------------------------------------------------------
cat >"$tmp/state.py" <<'PY'
import glob, json, os, sys
home = sys.argv[1]
def load(p, default):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception:
        return default
tasks = {}
for p in glob.glob(os.path.join(home, "tasks/*/*/task.json")):
    t = load(p, None)
    if isinstance(t, dict) and "id" in t:
        tasks[(t.get("project"), t["id"])] = t
        print("T", t["id"], t.get("status"), t.get("project"), t.get("workspace") or "-")
pool = load(os.path.join(home, "workspaces/.pool.json"), {}) or {}
for name, s in (pool.get("workspaces") or {}).items():
    if s.get("status") != "bound" or not s.get("task"):
        continue
    label = s["task"]
    t = tasks.get((s.get("project"), label))
    kind = t["status"] if t else ("ext" if label.startswith("ext-") else "ghost")
    print("W", name, s.get("project"), label, kind, s.get("path") or os.path.join(home, "workspaces", name))
reg = load(os.path.join(home, "lanes/registry.json"), {}) or {}
for lid, r in (reg.get("lanes") or {}).items():
    print("L", lid, r.get("state"), r.get("project"))
PY

# ---------------------------------------------------------------------------------------
# The invariants (see the header). Prints "V <violation>", "N <note>" and one
# "S <counts>" line. Cheap enough to run after every kill.
# ---------------------------------------------------------------------------------------
cat >"$tmp/check.py" <<'PY'
import glob, json, os, subprocess, sys
home, sock, next_out, next_err, next_rc, planted, rescued = sys.argv[1:8]
V, N = [], []
FINAL = ("done", "cancelled")
IDLE = ("pending", "failed") + FINAL  # statuses that hold no workspace and no session

def load(path, what, missing_ok=False):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        if not missing_ok:
            V.append(f"{what} is missing ({path})")
        return None
    except Exception as e:
        V.append(f"{what} does not parse: {e} ({path})")
        return None

def dirty(path):
    if not os.path.isdir(path):
        return "its directory is gone"
    r = subprocess.run(["git", "-C", path, "status", "--porcelain"], capture_output=True, text=True)
    if r.returncode != 0:
        return "git status fails: " + (r.stderr.strip().splitlines() or ["?"])[0]
    return r.stdout.strip()

# The next command: it must succeed and print the task list.
if next_rc != "0":
    err = open(next_err).read().strip().splitlines()
    V.append(f"the next command (task list --all --json) failed, exit {next_rc}: {err[-1] if err else ''}")
else:
    try:
        listed = json.load(open(next_out))
        if not isinstance(listed, list):
            V.append("the next command (task list --all --json) printed no list")
    except Exception as e:
        V.append(f"the next command (task list --all --json) printed no JSON: {e}")

# Every state file parses.
load(os.path.join(home, "projects.json"), "projects.json")
# (No pool file before the first workspace is made.)
pool = load(os.path.join(home, "workspaces/.pool.json"), "workspaces/.pool.json", missing_ok=True) or {}
slots = pool.get("workspaces") or {}
tasks = {}
for p in glob.glob(os.path.join(home, "tasks/*/*/task.json")):
    t = load(p, f"task file {os.path.relpath(p, home)}", missing_ok=True)
    if t is None:
        continue
    proj, tid = p.split(os.sep)[-3:-1]
    if t.get("id") != tid or t.get("project") != proj:
        V.append(f"{os.path.relpath(p, home)} names task {t.get('project')}/{t.get('id')}")
    tasks[(proj, tid)] = t
lanes = {}
reg_path = os.path.join(home, "lanes/registry.json")
if os.path.exists(reg_path):
    reg = load(reg_path, "lanes/registry.json", missing_ok=True)
    if reg is not None:
        lanes = reg.get("lanes") or {}

# One active task per workspace, and the pool agrees with the task.
active = {k: t for k, t in tasks.items() if t.get("status") not in IDLE}
for (proj, tid), t in active.items():
    ws = t.get("workspace")
    if not ws:
        V.append(f"task {tid} is {t['status']} and holds no workspace")
        continue
    s = slots.get(ws)
    if not s or s.get("status") != "bound" or s.get("task") != tid or s.get("project") != proj:
        V.append(f"task {tid} ({t['status']}) holds {ws}, the pool says {s and {k: s.get(k) for k in ('status', 'task', 'project')}}")
for name, s in slots.items():
    if s.get("status") != "bound":
        continue
    label, proj = s.get("task"), s.get("project")
    path = s.get("path") or os.path.join(home, "workspaces", name)
    t = tasks.get((proj, label))
    if t is None:
        if label and label.startswith("ext-"):
            continue  # the soak's own `workspace acquire --task ext-N`
        d = dirty(path)
        if d:
            V.append(f"{name} is bound to {label!r}, no task any more, and keeps uncommitted work (`task delete` must refuse a task that keeps its workspace)")
        else:
            V.append(f"{name} is bound to {label!r}, no task any more, without uncommitted work")
        continue
    st = t.get("status")
    if st in ("pending", "failed", "done"):
        d = dirty(path)
        V.append(f"{name} is bound to {st} task {label}" + (f" (kept: uncommitted work {d.splitlines()[0]!r})" if d else ""))
    elif st == "cancelled":
        # Kept on purpose (cancel saw uncommitted work): the user's, until they release it
        # or a monitor pass finds it clean. Otherwise a repair must have released it.
        if not dirty(path) and not (t.get("workspace_kept") and t.get("workspace") == name):
            V.append(f"{name} is bound to cancelled task {label} without uncommitted work")
    elif t.get("workspace") != name:
        V.append(f"{name} is bound to task {label} ({st}), which holds {t.get('workspace')}")

# No live session without a live record.
r = subprocess.run(["tmux", "-L", sock, "list-sessions", "-F",
                    "\t".join(["#{session_id}", "#{session_name}", "#{@orange_task}", "#{@orange_lane}",
                               "#{@orange_project}", "#{@orange_home}"])],
                   capture_output=True, text=True)
sessions = 0
if r.returncode != 0:
    V.append(f"tmux list-sessions fails: {r.stderr.strip()}")
real_home = os.path.realpath(home)
for line in r.stdout.splitlines():
    sid, sname, task, lane, proj, shome = (line.split("\t") + [""] * 6)[:6]
    if not shome or os.path.realpath(shome) != real_home:
        continue
    sessions += 1
    if task:
        t = tasks.get((proj, task))
        if t is None:
            V.append(f"session {sname} ({sid}) of task {task} lives; its task does not exist")
        elif t.get("status") in IDLE:
            V.append(f"session {sname} ({sid}) of task {task} lives; its task is {t.get('status')}")
        elif t.get("tmux_session_id") != sid:
            V.append(f"session {sname} ({sid}) of task {task} lives; the task's record names session {t.get('tmux_session_id')}")
    if lane:
        rec = lanes.get(lane)
        if rec is None:
            V.append(f"session {sname} ({sid}) of lane {lane} lives; no such lane is recorded")
        elif rec.get("state") == "closed":
            V.append(f"session {sname} ({sid}) of lane {lane} lives; the lane is closed")
for lid, rec in lanes.items():
    if rec.get("state") == "creating":
        V.append(f"lane {lid} is left creating")

# Planted user changes: still in their workspace, or where the soak's user moved them.
lost = 0
for line in open(planted):
    rel = line.strip()
    if rel and not os.path.exists(os.path.join(home, "workspaces", rel)) and not os.path.exists(os.path.join(rescued, rel)):
        lost += 1
        V.append(f"planted user change {rel} was lost")

bound = sum(1 for s in slots.values() if s.get("status") == "bound")
live_lanes = sum(1 for r in lanes.values() if r.get("state") != "closed")
for v in V:
    print("V", v)
for n in N:
    print("N", n)
print(f"S {len(tasks)} tasks ({len(active)} active), {len(slots)} workspaces ({bound} bound), {len(lanes)} lanes ({live_lanes} open), {sessions} orange sessions, {lost} user changes lost")
PY

o() { "$ORANGE" "$@" 2>/dev/null; }
pick() { local a=("$@"); printf '%s' "${a[RANDOM % ${#a[@]}]}"; }

declare -i notes=0 n=0 ops=0 sigkills=0 crashes=0 kill_tries=0 late=0 kills_agent=0 planted=0 \
    rescued=0 checks=0 violations=0 repairs=0 reported=0
declare -A tried=() succeeded=() seen=()
last_stats=""

# state: refresh $tmp/state.txt. choose AWK: $chosen := a random line that AWK prints of it.
state() { "$py" "$tmp/state.py" "$ORANGE_HOME" >"$tmp/state.txt"; }
chosen=""
choose() {
    local -a lines=()
    mapfile -t lines < <(awk "$1" "$tmp/state.txt")
    ((${#lines[@]} > 0)) || return 1
    chosen=${lines[RANDOM % ${#lines[@]}]}
}

# check WHY: the next command, then the invariants. New violations are counted and shown
# with the operations that led to them.
check() {
    local why=$1 rc=0 line
    checks+=1
    "$ORANGE" task list --all --json >"$tmp/next.out" 2>"$tmp/next.err" </dev/null || rc=$?
    while IFS= read -r line; do
        repairs+=1
        printf '      %s\n' "$line" >>"$log"
    done < <(grep '^orange: repaired:' "$tmp/next.err" || true)
    "$py" "$tmp/check.py" "$ORANGE_HOME" "$sock" "$tmp/next.out" "$tmp/next.err" "$rc" \
        "$tmp/planted/list" "$tmp/rescued" >"$tmp/check.out" 2>&1 || true
    grep -q '^S ' "$tmp/check.out" || {
        sed 's/^/    /' "$tmp/check.out" >&2
        printf 'V the invariant check itself failed (after %s)\n' "$why" >>"$tmp/check.out"
    }
    while IFS= read -r line; do
        case $line in
        "S "*) last_stats=${line#S } ;;
        "V "* | "N "*)
            [[ -z ${seen[$line]:-} ]] || continue
            seen[$line]=1
            printf '    !! %s\n' "$line" >>"$log"
            [[ $line == "V "* ]] || continue
            violations+=1
            printf 'soak: VIOLATION (check %d, after %s): %s\n' "$checks" "$why" "${line#V }" >&2
            if ((reported < 5)); then
                reported+=1
                echo "  the operations before it (newest last):" >&2
                grep -v '^    !!' "$log" | tail -n 12 | sed 's/^/    /' >&2
            fi
            ;;
        esac
    done <"$tmp/check.out"
}

# drain PGID: the children a killed orange left (git, tmux clients) finish their work
# before the next command runs; after 10 s they are killed.
drain() {
    local i
    for ((i = 0; i < 500; i++)); do
        pgrep -g "$1" >/dev/null || return 0
        sleep 0.02
    done
    printf '      (processes left by %s after 10 s: killed)\n' "$1" >>"$log"
    kill -9 -- "-$1" 2>/dev/null || true
}

# run_op KIND "FAULT POINTS" ARG...: run `orange ARG...` — plainly, or in the background
# SIGKILLed after 0–90 ms (~40%), or with ORANGE_CRASH_AT at one of the points (~10%).
# Sets op_rc; its stdout is in $tmp/op.out. A killed operation is followed by check.
op_rc=0
run_op() {
    local kind=$1 mode=plain point="" delay="" pid killed=0 r err
    local -a points=()
    read -ra points <<<"$2"
    shift 2
    r=$((RANDOM % 100))
    if ((r < 40)); then
        mode="kill"
    elif ((r < 50 && ${#points[@]} > 0)); then
        mode=crash
        point=${points[RANDOM % ${#points[@]}]}
    fi
    ops+=1
    tried[$kind]=$((${tried[$kind]:-0} + 1))
    op_rc=0
    case $mode in
    plain)
        "$ORANGE" "$@" >"$tmp/op.out" 2>"$tmp/op.err" </dev/null || op_rc=$?
        ;;
    crash)
        { ORANGE_CRASH_AT=$point "$ORANGE" "$@" >"$tmp/op.out" 2>"$tmp/op.err" </dev/null; } 2>/dev/null || op_rc=$?
        if ((op_rc == 134)); then
            crashes+=1
            killed=1
        fi
        mode="crash@$point"
        ;;
    kill)
        kill_tries+=1
        # Its own process group, so what it started can be waited for.
        setsid "$ORANGE" "$@" >"$tmp/op.out" 2>"$tmp/op.err" </dev/null &
        pid=$!
        printf -v delay '0.%03d' "$((RANDOM % 91))"
        sleep "$delay"
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || op_rc=$?
        if ((op_rc == 137)); then
            sigkills+=1
            killed=1
        else
            late+=1
        fi
        drain "$pid"
        mode="kill@${delay}s"
        ;;
    esac
    ((op_rc != 0)) || succeeded[$kind]=$((${succeeded[$kind]:-0} + 1))
    # The error: {"error":{…,"message":"…"}} on stdout (--json), else stderr's first line.
    err=$(sed -n 's/.*"message":"\(.*\)"}}$/\1/p' "$tmp/op.out" | head -n 1 || true)
    [[ -n $err ]] || err=$(grep -v '^orange: repaired:' "$tmp/op.err" | head -n 1 || true)
    printf '%4d %-12s %-22s rc=%-3d orange %s%s\n' "$n" "$kind" "$mode" "$op_rc" "$*" \
        "${err:+   # ${err:0:160}}" >>"$log"
    if ((killed)); then
        check "$kind $mode"
    fi
    return 0
}

# plant ID: a user change in the workspace the pool binds to task ID (never to be lost).
plant() {
    choose "\$1 == \"W\" && \$4 == \"$1\" { print \$2, \$6 }" || return 0
    local ws=${chosen%% *} path=${chosen#* }
    [[ -d $path ]] || return 0
    echo "precious $n" >"$path/planted-$n.txt"
    echo "$ws/planted-$n.txt" >>"$tmp/planted/list"
    planted+=1
}

harness() { printf 'soak-%s' "$(pick complete wait fail exit0)"; }

end=$((SECONDS + seconds))
last_check=0
while ((SECONDS < end)); do
    n+=1
    p=$(pick "${projects[@]}")
    state
    case $((RANDOM % 42)) in
    [0-7])
        run_op create "spawn.acquired spawn.started" \
            task create "soak/$p-$n" "soak task $n" --project "$p" --harness "$(harness)" --json
        ;;
    8 | 9 | 10)
        run_op create-queued "" task create "soak/q-$p-$n" "queued task $n" --project "$p" \
            --harness "$(harness)" --no-spawn --json
        id=""
        if ((op_rc == 0)); then
            id=$(grep -o '"id":"[^"]*"' "$tmp/op.out" | head -n 1 | cut -d'"' -f4 || true)
        elif choose '$1 == "T" && $3 == "pending" { print $2 }'; then
            id=$chosen
        fi
        [[ -z $id ]] || run_op spawn "spawn.acquired spawn.started" task spawn "$id" --json
        ;;
    11 | 12 | 13 | 14)
        if choose '$1 == "T" && $3 !~ /^(pending|failed|done|cancelled)$/ { print $2 }'; then
            id=$chosen
            # Merge must refuse a workspace with uncommitted work, so nothing is lost.
            ((RANDOM % 8)) || plant "$id"
            run_op merge "merge.merged merge.recorded spawn.acquired spawn.started" \
                task merge "$id" --local --strategy "$(pick ff ff merge)" --json
        fi
        ;;
    15 | 16 | 17 | 18)
        if choose '$1 == "T" && $3 !~ /^(done|cancelled)$/ { print $2 }'; then
            id=$chosen
            # Cancel keeps a workspace with uncommitted work.
            plant "$id"
            run_op cancel "cancel.recorded spawn.acquired spawn.started" task cancel "$id" --yes --json
        fi
        ;;
    19 | 20)
        if choose '$1 == "T" && $3 !~ /^(pending|done|cancelled)$/ { print $2 }'; then
            run_op respawn "respawn.started spawn.acquired spawn.started" task respawn "$chosen" --json
        fi
        ;;
    21 | 22)
        if choose '$1 == "T" && $3 ~ /^(failed|done|cancelled)$/ { print $2 }'; then
            run_op delete "" task delete "$chosen" --yes --json
        fi
        ;;
    23 | 24)
        run_op acquire "" workspace acquire --task "ext-$n" --project "$p" --json
        ;;
    25 | 26)
        if choose '$1 == "W" && $5 == "ext" { print $2 }'; then
            run_op release "spawn.acquired spawn.started" workspace release "$chosen" --json
        fi
        ;;
    27 | 28 | 29)
        run_op lane-create "lane.recorded lane.started" \
            lane create --task-id "soak-lane-$n" --harness soak-wait --project "$p" --json
        ;;
    30 | 31)
        if choose '$1 == "L" && $3 != "closed" { print $2 }'; then
            run_op lane-close "" lane close --force "$chosen" --json
        fi
        ;;
    32 | 33)
        run_op monitor "respawn.started" monitor --once --json
        ;;
    34)
        run_op gc "spawn.acquired spawn.started" workspace gc --project "$p" --json
        ;;
    35 | 36 | 37)
        # SIGKILL a random agent.
        mapfile -t pids < <(tmux -L "$sock" list-panes -a -F '#{session_name} #{pane_pid} #{pane_dead}' | awk '$1 != "keepalive" && $3 == 0 { print $2 }' || true)
        pid=""
        ((${#pids[@]} == 0)) || pid=${pids[RANDOM % ${#pids[@]}]}
        if [[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null; then
            kills_agent+=1
            printf '%4d %-12s pid %s\n' "$n" agent-kill "$pid" >>"$log"
        fi
        ;;
    *)
        # The user takes their work out of a workspace kept for it (a cancelled task's, or
        # a deleted one's), commits what is left, and lets it go.
        if choose '$1 == "W" && ($5 == "cancelled" || $5 == "ghost") { print $2, $4, $5, $6 }'; then
            read -r ws label kind path <<<"$chosen"
            if [[ -d $path ]]; then
                mkdir -p "$tmp/rescued/$ws"
                find "$path" -maxdepth 1 -name 'planted-*.txt' -exec mv -t "$tmp/rescued/$ws/" {} + 2>/dev/null || true
                if [[ -n $(git -C "$path" status --porcelain 2>/dev/null) ]]; then
                    git -C "$path" add -A >/dev/null 2>&1 && git -C "$path" commit -qm "soak: the user's work" >/dev/null 2>&1 || true
                fi
                rescued+=1
                printf '%4d %-12s %s (task %s, %s)\n' "$n" rescue "$ws" "$label" "$kind" >>"$log"
                # Then lets it go, as cancel's note says (a monitor pass would too, once the
                # workspace is clean).
                run_op release "spawn.acquired spawn.started" workspace release "$ws" --json
            fi
        fi
        ;;
    esac
    if ((checks == last_check && n % 8 == 0)); then
        check periodic
    fi
    last_check=$checks
done

# The agents' own commands (`orange task complete`) settle, then the last check.
sleep 1
check final

summary=""
for k in create create-queued spawn merge cancel respawn delete acquire release lane-create lane-close monitor gc; do
    [[ -z ${tried[$k]:-} ]] || summary+=" $k ${succeeded[$k]:-0}/${tried[$k]}"
done
echo "soak: ${seconds}s, seed $seed: $n iterations, $ops operations (ok/run:$summary)"
echo "soak: $((sigkills + crashes)) orange processes killed ($sigkills SIGKILLs after 0-90 ms of $kill_tries tried, $late finished first; $crashes ORANGE_CRASH_AT aborts), $kills_agent agents killed (SIGKILL), $planted user changes planted, $rescued workspaces rescued by the user"
echo "soak: $checks checks ($repairs repairs by the next command); last: $last_stats"
for line in "${!seen[@]}"; do
    [[ $line == "N "* ]] || continue
    notes+=1
    echo "note: ${line#N }"
done
echo "soak: $n iterations, $ops operations, $((sigkills + crashes)) kills, $kills_agent agent kills, $violations invariant violations"
if ((violations > 0)); then
    for line in "${!seen[@]}"; do
        [[ $line != "V "* ]] || echo "FAIL: ${line#V }"
    done
    echo "soak: operations log: $log${SOAK_KEEP:+ (kept)}" >&2
    exit 1
fi
