#!/usr/bin/env bash
# bench.sh — the observer's figures in one run, each next to its baseline and its target, one
# table at the end (medians; ratio = orange / baseline, lower is better):
#   monitor     one pass, `orange monitor --once --json`, over 10 / 50 / 200 live task
#               sessions vs one `tmux list-panes -a`; the pass as the running monitor
#               makes it (`orange monitor --passes 5`, the median of the last four:
#               nothing changed between them; `--poke task`: a poke before each, as an
#               agent's hook makes; `--poke other`: as a command makes), a bare list-panes
#               timed between runs; and the processes one pass spawns (strace -f: every
#               successful execve; a `tmux` wrapper first on PATH too)
#               targets: ≤ 1.5× and exactly 1 process per pass
#   status      `orange status --format tmux` with 1,000 tasks (990 cancelled, 10 live) vs
#               `tmux display -p x`; and the processes of an `orange status` run right
#               after another one (the snapshot is fresh)
#               targets: ≤ 1.2× and 0 processes
#   create      `orange task create --no-spawn` with 1,000 finished (cancelled) tasks vs
#               with 10: two data roots with 10 live tasks each, runs alternating between
#               them; each created task is cancelled and deleted, untimed, so the counts
#               stay put                                        target: within 10%
#   sidebars    20 `orange sidebar --task ID` running in 20 tmux panes (their server from
#               $TMUX, as the plugin opens them) with `orange monitor` running beside them
#               as the plugin runs it: tmux processes per second over 10 s, counted by a
#               `tmux` wrapper first on their PATH (sidebars and monitor apart, git too),
#               and the RSS of one sidebar (VmRSS; split into RssAnon, RssFile, its own
#               binary's pages and Pss)        targets: ≤ 1 tmux process/s, ≤ 6 MB
#   firstframe  `orange sidebar --task ID --once` (line-count cache removed before each run)
#               in a workspace of 5,000 files of which 1,000 changed (uncommitted: modified,
#               staged, deleted, renamed, untracked) vs `git diff --name-status HEAD` +
#               `git status --porcelain` there                  target: ≤ 1.0×
#
# Everything runs through orange's command line only (no state file is read or written by
# this script, apart from removing the sidebar's line-count cache for `firstframe`), on a
# private tmux server (`tmux -L bench-$$ -f /dev/null`, restarted for each figure), a
# fresh ORANGE_HOME and a fresh git repository with a bare origin per figure, all under
# one mktemp -d directory removed at exit (with the server).
#
# Usage: scripts/bench.sh [monitor] [status] [create] [sidebars] [firstframe]  (default: all)
#        scripts/bench.sh suite [pool|task|status|sidebar|monitor ...]
#                    the per-topic scripts scripts/bench-*.sh --json, one table (README's)
# Environment:
#   ORANGE_BIN      the binary (default: target/release/orange, built if missing)
#   QUICK=1         fewer runs per measure (for a smoke run; fixtures keep their sizes)
#   BENCH_RUNS      runs per timed measure (default 20; QUICK: 5), status gets 5× as many
#   BENCH_SESSIONS  the monitor's session counts (default "10 50 200")
#   BENCH_REAL_TASKS  at most this many of those sessions are real orange tasks, the rest
#                   plain tmux sessions running sleep (default: all real)
#   BENCH_SIDEBAR_SECONDS  the sidebars' counting window (default 10; QUICK: 5)
#   BENCH_SIDEBAR_AGENTS   tasks running while the sidebars run (default 20; sidebars are
#                   opened on the first 20)
#   BENCH_SIDEBAR_BUSY=1  those agents print a line a second (default: idle)
#   BENCH_BASE_BIN  also run as many sidebars of this binary beside orange's, on the same
#                   tasks in the same run: their memory is the baseline (ratio = orange / it)
#   BENCH_KEEP=1    keep the temporary directory
#   BENCH_BASE_BIN  another orange binary (an older build): the monitor figure also times
#                   its pass in the monitor on the same sessions, runs alternating with
#                   ORANGE_BIN's, and shows both ratios (before and after, one run); a
#                   build without `monitor --passes` is timed by its `--once` pass_ms
# Timing: hyperfine when installed (`--runs N`, medians from its JSON; the create figure
# always uses the loop, as it cleans up between runs), else a loop reading $EPOCHREALTIME
# (no fork) around each run, orange and baseline interleaved. Run it under `nice` on a
# busy machine and read the load averages printed with each figure. Before each measure
# the fixture's writes are flushed (`sync`): orange's fsyncs must not wait for them.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

# ---------------------------------------------------------------------------------------
# `suite`: the per-topic benchmark scripts, one table (what README's first table shows)
# ---------------------------------------------------------------------------------------
if [[ ${1:-} == suite ]]; then
    shift
    names=("$@")
    [[ ${#names[@]} -gt 0 ]] || names=(pool task status sidebar monitor)
    bench_build_orange "$root"
    export ORANGE_BIN=$ORANGE
    out=$(mktemp -d "${TMPDIR:-/tmp}/orange-bench-all.XXXXXX")
    trap 'rm -rf -- "$out"' EXIT
    for n in "${names[@]}"; do
        [[ -x "$script_dir/bench-$n.sh" ]] || bench_die "no benchmark $n"
        bench_log "running bench-$n.sh"
        "$script_dir/bench-$n.sh" --json >"$out/$n.json" 2>"$out/$n.err" || {
            cat "$out/$n.err" >&2
            bench_die "bench-$n.sh failed"
        }
    done
    bench_machine_line "${TMPDIR:-/tmp}"
    echo
    python3 - "$out" "${names[@]}" <<'PY'
import json, sys, os
out, names = sys.argv[1], sys.argv[2:]
rows = [("benchmark", "measure", "orange ms", "baseline ms", "ratio")]
for n in names:
    data = json.load(open(os.path.join(out, n + ".json")))
    for measure, v in data.items():
        if not isinstance(v, dict):
            continue
        keys = [k for k in v if k.endswith("_ms") and "p90" not in k]
        ours = v.get("orange_ms")
        base = next((v[k] for k in keys if k != "orange_ms"), None)
        ratio = v.get("ratio")
        extra = ""
        if "orange_processes" in v:
            extra = f" ({v['orange_processes']} vs {v['baseline_processes']} processes)"
        rows.append((n, measure + extra, f"{ours:.2f}" if ours is not None else "-",
                     f"{base:.2f}" if base is not None else "-",
                     (f"{ratio:.2f}x" if ratio is not None else "-")))
w = [max(len(r[i]) for r in rows) for i in range(5)]
for i, r in enumerate(rows):
    print("  ".join(c.ljust(w[j]) if j < 2 else c.rjust(w[j]) for j, c in enumerate(r)))
    if i == 0:
        print("  ".join("-" * x for x in w))
PY
    exit 0
fi

# ---------------------------------------------------------------------------------------
# Arguments and settings
# ---------------------------------------------------------------------------------------
all_figures=(monitor status create sidebars firstframe)
figures=()
for arg in "$@"; do
    case $arg in
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    monitor | status | create | sidebars | firstframe) figures+=("$arg") ;;
    all) figures+=("${all_figures[@]}") ;;
    *) bench_die "unknown figure: $arg (monitor status create sidebars firstframe, or suite; --help)" ;;
    esac
done
[[ ${#figures[@]} -gt 0 ]] || figures=("${all_figures[@]}")
want() {
    local f
    for f in "${figures[@]}"; do [[ $f == "$1" ]] && return 0; done
    return 1
}

quick=${QUICK:-0}
[[ $quick == 0 || $quick == 1 ]] || bench_die "QUICK must be 0 or 1"
if ((quick)); then runs=${BENCH_RUNS:-5} warmup=1 window=${BENCH_SIDEBAR_SECONDS:-5}; else
    runs=${BENCH_RUNS:-20} warmup=2 window=${BENCH_SIDEBAR_SECONDS:-10}
fi
status_runs=$((runs * 5))
read -r -a session_counts <<<"${BENCH_SESSIONS:-10 50 200}"
real_tasks=${BENCH_REAL_TASKS:-}
for v in "BENCH_RUNS=$runs" "BENCH_SIDEBAR_SECONDS=$window" "BENCH_REAL_TASKS=${real_tasks:-0}" \
    "${session_counts[@]/#/BENCH_SESSIONS=}"; do
    [[ ${v#*=} =~ ^[0-9]+$ ]] || bench_die "${v%%=*} must be a non-negative integer (got '${v#*=}')"
done
((runs > 0)) || bench_die "BENCH_RUNS must be at least 1"

command -v tmux >/dev/null || bench_die "tmux not found"
real_tmux=$(command -v tmux)
real_git=$(command -v git)
have_strace=0
command -v strace >/dev/null && have_strace=1
have_hyperfine=0
command -v hyperfine >/dev/null && have_hyperfine=1

# The binary: $ORANGE_BIN, else target/release/orange (built when missing).
if [[ -z "${ORANGE_BIN:-}" && -x "$root/target/release/orange" ]]; then
    ORANGE_BIN="$root/target/release/orange"
fi
bench_build_orange "$root"

sock="bench-$$"
bench_workspace bench "$sock" # tmp, ORANGE_HOME, ORANGE_TMUX_SOCKET, git env, cleanup trap
# A killed -L server leaves its socket file behind: remove it too, then the usual clean-up.
sock_file="${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock"
trap 'rc=$?; set +e; tmux -L "$sock" kill-server 2>/dev/null; rm -f -- "$sock_file"; (exit "$rc"); _bench_cleanup' EXIT
unset ORANGE_TASK_ID ORANGE_PROJECT ORANGE_WORKSPACE COLUMNS LINES
results="$tmp/results.tsv"
details="$tmp/details.txt"
: >"$results"
: >"$details"
started=$SECONDS

# Counting wrappers: `tmux` and `git` first on PATH append "<name> <$BENCH_WHO>" to $counter
# and exec the real program (used only for counting runs, never for timed ones).
wrap="$tmp/wrap"
counter="$tmp/counter"
mkdir -p "$wrap"
: >"$counter"
for prog in tmux git; do
    real=$real_tmux
    [[ $prog == git ]] && real=$real_git
    # shellcheck disable=SC2016 # $BENCH_WHO and "$@" are the wrapper's
    printf '#!/bin/sh\necho "%s ${BENCH_WHO:-cmd}" >>"%s"\nexec "%s" "$@"\n' "$prog" "$counter" "$real" >"$wrap/$prog"
    chmod +x "$wrap/$prog"
done

# note MSG: a line for the details printed before the table (and progress on stderr).
note() {
    printf '%s\n' "$*" >>"$details"
    bench_log "$*"
}
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }

# row FIGURE ORANGE BASELINE RATIO TARGET VERDICT: one line of the final table.
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$results"; }

ms() { awk -v ns="$1" 'BEGIN { printf "%.2f ms", ns / 1e6 }'; }
# ratio_of ORANGE BASE → "1.23" (orange / baseline)
ratio_of() { awk -v o="$1" -v b="$2" 'BEGIN { if (b <= 0) print "n/a"; else printf "%.2f\n", o / b }'; }
# verdict VALUE OP LIMIT → met / NOT met (OP: le or eq)
verdict() {
    awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN {
        if (v == "n/a" || v == "") { print "n/a"; exit }
        ok = (op == "le") ? (v + 0 <= l + 0) : (v + 0 == l + 0)
        print ok ? "met" : "NOT met" }'
}

# ---------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------

# q ARG...: the arguments as one shell-quoted command string.
q() {
    local out="" a
    for a in "$@"; do out+="${out:+ }$(printf '%q' "$a")"; done
    printf '%s' "$out"
}

# run_cmd VAR CMDSTRING: time one run of CMDSTRING (a bash command line), ns into VAR.
run_cmd() { bench_time "$1" eval "$2"; }

# hyperfine_median VAR RUNS CMDSTRING [PREPARE]: hyperfine's median, in ns, into VAR.
hyperfine_median() {
    local __var=$1 n=$2 cmd=$3 prep=${4:-} shell=(-N) json="$tmp/hyperfine.json" secs
    # Without a shell hyperfine splits the string itself: only for simple commands.
    [[ $cmd == *['&|;<>$*']* ]] && shell=(--shell=bash)
    local args=(--runs "$n" --warmup "$warmup" --style none --export-json "$json" "${shell[@]}")
    [[ -n $prep ]] && args+=(--prepare "$prep")
    hyperfine "${args[@]}" -- "$cmd" >/dev/null 2>"$tmp/hyperfine.err" || {
        cat "$tmp/hyperfine.err" >&2
        bench_die "hyperfine failed on: $cmd"
    }
    secs=$(sed -n 's/.*"median": *\([0-9.eE+-]*\).*/\1/p' "$json" | head -n 1)
    [[ -n $secs ]] || bench_die "no median in hyperfine's output for: $cmd"
    printf -v "$__var" '%s' "$(awk -v s="$secs" 'BEGIN { printf "%.0f", s * 1e9 }')"
}

# compare KEY RUNS ORANGE_CMD BASE_CMD [ORANGE_PREPARE]: medians (ns) of both command
# strings into om and bm. The loop interleaves them (alternating which goes first) after
# $warmup warm-up rounds; PREPARE runs, untimed, before each orange run.
compare() {
    local key=$1 n=$2 ocmd=$3 bcmd=$4 prep=${5:-} i t
    if ((have_hyperfine)); then
        hyperfine_median om "$n" "$ocmd" "$prep"
        hyperfine_median bm "$n" "$bcmd"
        return 0
    fi
    for ((i = -warmup; i < n; i++)); do
        if (((i + warmup) % 2 == 0)); then
            [[ -z $prep ]] || eval "$prep" >/dev/null 2>&1
            run_cmd t "$ocmd" || bench_die "failed: $ocmd"
            ((i < 0)) || bench_record "$key.orange" "$t"
            run_cmd t "$bcmd" || bench_die "failed: $bcmd"
            ((i < 0)) || bench_record "$key.base" "$t"
        else
            run_cmd t "$bcmd" || bench_die "failed: $bcmd"
            ((i < 0)) || bench_record "$key.base" "$t"
            [[ -z $prep ]] || eval "$prep" >/dev/null 2>&1
            run_cmd t "$ocmd" || bench_die "failed: $ocmd"
            ((i < 0)) || bench_record "$key.orange" "$t"
        fi
    done
    om=$(bench_stat "$key.orange" median)
    bm=$(bench_stat "$key.base" median)
    spread "$key.orange" "$key.base"
}

# spread KEY...: one note with min / median / p90 / max of each key's samples (the noise).
spread() {
    local k line=""
    for k in "$@"; do
        line+="${line:+; }$k: min $(bench_ms "$(bench_stat "$k" min)") median $(bench_ms "$(bench_stat "$k" median)")"
        line+=" p90 $(bench_ms "$(bench_stat "$k" p90)") max $(bench_ms "$(bench_stat "$k" max)") ms (n=$(bench_stat "$k" n))"
    done
    note "  $line"
}

# ---------------------------------------------------------------------------------------
# Counting processes
# ---------------------------------------------------------------------------------------

# strace_count CMD...: run CMD under `strace -f`; procs := successful execve calls minus
# CMD's own, procs_by := "N name, …" (by program name).
strace_count() {
    local dir="$tmp/strace.$RANDOM"
    mkdir -p "$dir"
    strace -f -ff -qq -e trace=execve -o "$dir/t" -- "$@" >/dev/null 2>"$dir/err" || {
        cat "$dir/err" >&2
        bench_die "failed under strace: $*"
    }
    # One file per process (-ff): no call is split by another's.
    cat "$dir"/t.* | grep -E '^execve\(.*\) = 0$' |
        sed 's/^execve("\([^"]*\)".*/\1/; s#.*/##' >"$dir/all" || true
    procs=$(($(wc -l <"$dir/all") - 1))
    # The first successful execve of the traced command is the command itself.
    procs_by=$(sed '1d' "$dir/all" | sort | uniq -c | awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " }')
    [[ -n $procs_by ]] || procs_by="none"
    rm -rf -- "$dir"
}

# counted PROG WHO: how many PROG processes the wrappers saw started by WHO.
counted() { grep -c "^$1 $2\$" "$counter" || true; }

# wrapped_count CMD...: run CMD with the counting wrappers first on PATH; wtmux := its tmux
# processes, wgit := its git processes.
wrapped_count() {
    : >"$counter"
    PATH="$wrap:$PATH" "$@" >/dev/null 2>"$tmp/wrapped.err" || {
        cat "$tmp/wrapped.err" >&2
        bench_die "failed: $*"
    }
    wtmux=$(counted tmux cmd)
    wgit=$(counted git cmd)
}

# processes FIGURE CMD...: count CMD's processes both ways; procs (strace when available,
# else the wrappers' count) for the table, the details for the notes.
processes() {
    local fig=$1
    shift
    wrapped_count "$@"
    if ((have_strace)); then
        strace_count "$@"
        note "  $fig: $procs process(es) (strace: $procs_by; tmux wrapper: $wtmux tmux, $wgit git)"
    else
        procs=$((wtmux + wgit))
        note "  $fig: $procs process(es) (no strace: tmux + git wrappers only: $wtmux tmux, $wgit git)"
    fi
}

# ---------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------

# restart_server: kill the private server (if any) and start it again, empty but for a
# keepalive session (a server still exiting refuses the new client: retry).
restart_server() {
    local i
    tmux -L "$sock" kill-server 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        tmux -L "$sock" -f /dev/null new-session -d -s keepalive -x 200 -y 50 2>/dev/null && return 0
        sleep 0.1
    done
    bench_die "cannot start the tmux server -L $sock"
}

# fresh NAME NFILES NDIRS [keep]: a fresh tmux server (keepalive session; `keep`: the one
# that runs), ORANGE_HOME and repository (bare origin + clone) for one figure, the project
# registered; cwd := the clone, repo := its path.
fresh() {
    local fig=$1 nfiles=$2 ndirs=$3
    [[ ${4:-} == keep ]] || restart_server
    export ORANGE_HOME="$tmp/$fig/home"
    mkdir -p "$ORANGE_HOME"
    # An agent that only stays alive (the prompt orange appends becomes a comment); the
    # monitor must not act on idle agents while we measure.
    cat >"$ORANGE_HOME/config.toml" <<'TOML'
default_harness = "idle"
[harness.idle]
command = "sleep 86400 #"
[policy]
idle_grace = "24h"
TOML
    repo=$(bench_make_repo "$tmp/$fig" "$nfiles" "$ndirs")
    cd "$repo"
    "$ORANGE" project add "$repo" --name bench --pool-size 250 >/dev/null ||
        bench_die "orange project add failed"
}

# new_task BRANCH [--no-spawn]: orange task create; id := the new task's id.
new_task() {
    local out
    out=$("$ORANGE" task create "$1" "benchmark task $1" --harness idle --json "${@:2}") ||
        bench_die "task create $1 failed: $out"
    id=$(sed -n 's/.*"id": *"\([0-9A-Za-z_-]*\)".*/\1/p' <<<"$out" | head -n 1)
    [[ -n $id ]] || bench_die "no task id in: $out"
}

# finished_tasks FROM TO: tasks FROM..TO created with --no-spawn and cancelled.
finished_tasks() {
    local i
    for ((i = $1; i <= $2; i++)); do
        new_task "done/t$i" --no-spawn
        "$ORANGE" task cancel "$id" --yes >/dev/null || bench_die "task cancel $id failed"
        ((i % 100)) || bench_log "  $i finished tasks"
    done
}

# settle: flush the fixture's writes (a pass that fsyncs would otherwise wait for the
# writeback of thousands of new files: hundreds of ms of noise) and let agents start.
settle() {
    sync
    sleep 1
}

live_sessions() { tmux -L "$sock" list-sessions -F '#{session_name}' | grep -vc '^keepalive$' || true; }

# ---------------------------------------------------------------------------------------
# 1. monitor
# ---------------------------------------------------------------------------------------

base_bin=${BENCH_BASE_BIN:-}
[[ -z $base_bin || -x $base_bin ]] || bench_die "BENCH_BASE_BIN is not an executable: $base_bin"

# pass_ms BIN: the `pass_ms` of one `BIN monitor --once --json` (empty when missing).
pass_ms() {
    "$1" monitor --once --json | sed -n 's/.*"pass_ms": *\([0-9.]*\).*/\1/p'
}

# in_monitor BIN [--poke task|other]: one `BIN monitor --passes 5 --json`, made as the running
# monitor makes its passes (one process, what it read kept between passes); in_ms := the
# median of the last four (the first also compiles what a monitor compiles once). With
# --poke, a poke before each pass: `task` as an agent's hook makes (one task's files
# changed), `other` as a command or a tmux hook makes. A binary without
# --passes (an older build): its `--once` pass_ms; without --poke (it keeps nothing between
# passes): its passes without.
in_monitor() {
    local out
    out=$("$1" monitor --passes 5 "${@:2}" --json 2>/dev/null | tr -d ' \n') ||
        out=$("$1" monitor --passes 5 --json 2>/dev/null | tr -d ' \n') || out=""
    out=$(sed -n 's/.*"pass_ms":\[\([0-9.,]*\)\].*/\1/p' <<<"$out")
    if [[ -z $out ]]; then
        in_ms=$(pass_ms "$1")
        return 0
    fi
    # shellcheck disable=SC2046 # one number a word
    in_ms=$(median $(tr ',' ' ' <<<"${out#*,}"))
}

# median MS...: the median of the numbers.
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2}'; }

# inner_row LABEL KEY BASE_MS MS...: the median of the passes' own times, a note and a table
# row against BASE_MS, the median of the bare list-panes timed between them.
inner_row() {
    local label=$1 key=$2 base=$3 med r
    shift 3
    (($# > 0)) || return 0
    med=$(median "$@")
    note "  monitor$key.pass_ms (in the monitor): median $med ms (n=$#), list-panes -a $base ms"
    r=$(awk -v a="$med" -v b="$base" 'BEGIN {printf "%.2f", a / b}')
    row "  $label" "$med ms" "list-panes -a $base ms" "${r}x" "≤ 1.5x" "$(verdict "$r" le 1.5)"
}
figure_monitor() {
    local n live=0 plain=0 want_real k t
    bench_log "monitor: fixture"
    note "monitor (load at start: $(load))"
    fresh monitor 200 10
    for n in "${session_counts[@]}"; do
        want_real=$n
        [[ -z $real_tasks ]] || ((want_real = n < real_tasks ? n : real_tasks))
        while ((live < want_real)); do
            live=$((live + 1))
            new_task "live/t$live"
        done
        while ((live + plain < n)); do
            plain=$((plain + 1))
            tmux -L "$sock" new-session -d -s "plain-$plain" -x 120 -y 30 "exec sleep 86400"
        done
        settle # the new agents start, the fixture's writes reach the disk
        k=$(live_sessions)
        ((k == n)) || bench_die "monitor: $k sessions are live, not $n"
        bench_log "monitor: $n sessions ($live orange tasks, $plain plain tmux sessions)"
        for ((t = 0; t < 2; t++)); do "$ORANGE" monitor --once --json >/dev/null; done
        compare "monitor$n" "$runs" "$(q "$ORANGE" monitor --once --json)" \
            "$(q tmux -L "$sock" list-panes -a)"
        local r label="$n sessions"
        ((plain == 0)) || label="$n sessions ($live tasks + $plain plain)"
        r=$(ratio_of "$om" "$bm")
        row "monitor pass, $label" "$(ms "$om")" "list-panes -a $(ms "$bm")" "${r}x" "≤ 1.5x" \
            "$(verdict "$r" le 1.5)"
        # The pass as the running monitor makes it (`--passes`: its own `pass_ms`, no
        # process start), with nothing changed between passes and with a poke before each,
        # a bare list-panes timed between runs; with BENCH_BASE_BIN, that binary's too,
        # runs alternating on the same sessions.
        local steady=() hook=() cmd=() base=() base_hook=() base_cmd=() lp=() v
        for ((t = 0; t < runs; t++)); do
            in_monitor "$ORANGE"
            steady+=("$in_ms")
            in_monitor "$ORANGE" --poke task
            hook+=("$in_ms")
            in_monitor "$ORANGE" --poke other
            cmd+=("$in_ms")
            bench_time v tmux -L "$sock" list-panes -a || bench_die "list-panes failed"
            lp+=("$(awk -v ns="$v" 'BEGIN { printf "%.3f", ns / 1e6 }')")
            if [[ -n $base_bin ]]; then
                in_monitor "$base_bin"
                base+=("$in_ms")
                in_monitor "$base_bin" --poke task
                base_hook+=("$in_ms")
                in_monitor "$base_bin" --poke other
                base_cmd+=("$in_ms")
            fi
        done
        v=$(median "${lp[@]}")
        inner_row "the pass in the monitor, $label" "$n" "$v" "${steady[@]}"
        inner_row "  after an agent's hook, $label" "$n.hook" "$v" "${hook[@]}"
        inner_row "  after a command, $label" "$n.command" "$v" "${cmd[@]}"
        if [[ -n $base_bin ]]; then
            inner_row "the pass in the monitor (BENCH_BASE_BIN), $label" "$n.base" "$v" "${base[@]}"
            inner_row "  after an agent's hook (BENCH_BASE_BIN), $label" "$n.base.hook" "$v" "${base_hook[@]}"
            inner_row "  after a command (BENCH_BASE_BIN), $label" "$n.base.command" "$v" "${base_cmd[@]}"
        fi
        processes "monitor pass, $n sessions ($live orange tasks, $plain plain sessions)" \
            "$ORANGE" monitor --once --json
        row "  processes per pass, $label" "$procs" "1" "-" "= 1" "$(verdict "$procs" eq 1)"
    done
    note "  (load at end: $(load))"
}

# ---------------------------------------------------------------------------------------
# 2. status and 3. create (one fixture: 10 live tasks, then 10, 990 and 1,000 finished)
# ---------------------------------------------------------------------------------------

# create_one MODE KEY HOME REPO I: one timed `task create --no-spawn` in the project of REPO
# under ORANGE_HOME=HOME (recorded as create.KEY unless MODE is warmup), then cancelled and
# deleted, untimed, so the count of tasks stays put.
create_one() {
    local mode=$1 key=$2 home=$3 dir=$4 i=$5 t0 t1 out
    cd "$dir"
    bench_now t0
    out=$(ORANGE_HOME=$home "$ORANGE" task create "bench/$key-$mode-$i" "benchmark task $key $i" \
        --harness idle --no-spawn --json) || bench_die "task create failed: $out"
    bench_now t1
    [[ $mode == warmup ]] || bench_record "create.$key" "$((t1 - t0))"
    id=$(sed -n 's/.*"id": *"\([0-9A-Za-z_-]*\)".*/\1/p' <<<"$out" | head -n 1)
    [[ -n $id ]] || bench_die "no task id in: $out"
    ORANGE_HOME=$home "$ORANGE" task cancel "$id" --yes >/dev/null || bench_die "task cancel $id failed"
    ORANGE_HOME=$home "$ORANGE" task delete "$id" --yes >/dev/null || bench_die "task delete $id failed"
}

# Two data roots on one tmux server, each with 10 live tasks: `big` gets 990 finished tasks
# (the status figure), then 1,000; `small` 10. The create figure alternates between them,
# so that the machine's drift (others' builds) falls on both alike.
figure_tasks() {
    local i r big_home big_repo small_home small_repo mode
    bench_log "status/create: fixture (10 live tasks, 990 finished ones)"
    note "status/create (load at start: $(load))"
    fresh tasks-big 50 5
    big_home=$ORANGE_HOME big_repo=$repo
    for ((i = 1; i <= 10; i++)); do new_task "live/t$i"; done
    finished_tasks 1 990
    if want status; then
        bench_log "status: 1,000 tasks (990 cancelled, 10 live)"
        settle
        compare status "$status_runs" "$(q "$ORANGE" status --format tmux)" \
            "$(q tmux -L "$sock" display -p x)"
        r=$(ratio_of "$om" "$bm")
        row "status --format tmux, 1,000 tasks" "$(ms "$om")" "display -p $(ms "$bm")" "${r}x" "≤ 1.2x" \
            "$(verdict "$r" le 1.2)"
        "$ORANGE" status --format tmux >/dev/null # the snapshot is fresh now
        processes "orange status, snapshot fresh" "$ORANGE" status --format tmux
        row "  processes, snapshot fresh" "$procs" "1" "-" "= 0" "$(verdict "$procs" eq 0)"
    fi
    if want create; then
        bench_log "create: 10 more finished tasks (1,000); a second data root with 10 live + 10 finished"
        finished_tasks 991 1000
        fresh tasks-small 50 5 keep
        small_home=$ORANGE_HOME small_repo=$repo
        for ((i = 1; i <= 10; i++)); do new_task "live/t$i"; done
        finished_tasks 1 10
        export ORANGE_HOME=$big_home
        settle
        bench_log "create: 1,000 vs 10 finished tasks, alternating"
        for ((i = -warmup; i < runs; i++)); do
            mode=record
            ((i >= 0)) || mode=warmup
            if (((i + warmup) % 2 == 0)); then
                create_one "$mode" with10 "$small_home" "$small_repo" "$i"
                create_one "$mode" with1000 "$big_home" "$big_repo" "$i"
            else
                create_one "$mode" with1000 "$big_home" "$big_repo" "$i"
                create_one "$mode" with10 "$small_home" "$small_repo" "$i"
            fi
        done
        spread create.with10 create.with1000
        local c10 c1000
        c10=$(bench_stat create.with10 median)
        c1000=$(bench_stat create.with1000 median)
        r=$(ratio_of "$c1000" "$c10")
        row "task create --no-spawn, 1,000 finished" "$(ms "$c1000")" "10 finished $(ms "$c10")" "${r}x" \
            "≤ 1.1x" "$(verdict "$r" le 1.1)"
    fi
    note "  (load at end: $(load))"
}

# ---------------------------------------------------------------------------------------
# 4. sidebars
# ---------------------------------------------------------------------------------------
# mem_of PID: "VmRSS RssAnon RssFile Pss BIN" in kB, BIN: the resident pages of the
# program's own file (its text and read-only data), from /proc (empty when it is gone).
mem_of() {
    local p=$1 exe st pss bin
    exe=$(readlink "/proc/$p/exe" 2>/dev/null) || return 0
    st=$(awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s ", $2 }' "/proc/$p/status" 2>/dev/null) || return 0
    pss=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null) || return 0
    bin=$(awk -v exe="$exe" '/^[0-9a-f]+-[0-9a-f]+ / { f = ($6 == exe) } f && /^Rss:/ { t += $2 }
        END { print t + 0 }' "/proc/$p/smaps" 2>/dev/null) || return 0
    [[ -n $st && -n $pss ]] && printf '%s%s %s\n' "$st" "$pss" "$bin"
}

# mem_stat FILE COLUMN: the median of one column (1 VmRSS … 5 BIN) of mem_of lines.
mem_stat() { awk -v c="$2" '{ print $c }' "$1" | bench_stat_stdin "${3:-median}"; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f MB", k / 1024 }'; }

figure_sidebars() {
    local i ids=() p name dead who mon_pid t0 t1 s0 s1 g0 g1 m0 m1 n_side
    local agents=${BENCH_SIDEBAR_AGENTS:-20} busy=${BENCH_SIDEBAR_BUSY:-0} base_bin=${BENCH_BASE_BIN:-}
    local kinds=(orange)
    [[ -n $base_bin ]] && kinds+=(base)
    n_side=$((agents < 20 ? agents : 20))
    bench_log "sidebars: fixture ($agents tasks$( ((busy)) && echo ", busy agents"))"
    note "sidebars (load at start: $(load))"
    fresh sidebars 200 10
    if ((busy)); then
        # A busy agent: a new line on its screen every second, so the monitor's snapshot
        # (what every sidebar reads) changes at each pass. It replaces the idle command.
        # shellcheck disable=SC2016 # the agent's own variables
        printf '#!/bin/sh\ni=0\nwhile :; do i=$((i + 1)); echo "working: step $i, editing src/file$i.rs"; sleep 1; done\n' \
            >"$tmp/busy-agent.sh"
        chmod +x "$tmp/busy-agent.sh"
        sed -i "s|^command = \"sleep 86400 #\"|command = \"$tmp/busy-agent.sh #\"|" "$ORANGE_HOME/config.toml"
        grep -q busy-agent "$ORANGE_HOME/config.toml" || bench_die "sidebars: no busy harness in the config"
    fi
    for ((i = 1; i <= agents; i++)); do
        new_task "side/t$i"
        ids+=("$id")
    done
    settle
    : >"$counter"
    # The monitor, as the plugin runs it (`orange monitor`, its default interval): in the
    # design it is the one process that asks tmux, for every reader.
    BENCH_WHO=monitor PATH="$wrap:$PATH" "$ORANGE" monitor >"$tmp/monitor.out" 2>&1 &
    mon_pid=$!
    # Each sidebar in its own pane of one session, as the plugin opens them: its server
    # comes from the pane's $TMUX (ORANGE_TMUX_SOCKET unset), the wrappers first on PATH.
    # With BENCH_BASE_BIN, as many sidebars of that binary beside them, on the same tasks.
    tmux -L "$sock" new-session -d -s sidebars -x 200 -y 50
    for who in "${kinds[@]}"; do
        local bin=$ORANGE
        [[ $who == base ]] && bin=$base_bin
        for ((i = 0; i < n_side; i++)); do
            tmux -L "$sock" new-window -d -n "$who" -t "=sidebars:" \
                "exec env -u ORANGE_TMUX_SOCKET BENCH_WHO=sidebar-$who PATH=$(q "$wrap:$PATH") \
ORANGE_HOME=$(q "$ORANGE_HOME") GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$(q "$GIT_CONFIG_GLOBAL") \
$(q "$bin") sidebar --task ${ids[i]}"
        done
    done
    sleep 3 # first frames, first git reads
    local -A pids=()
    while IFS=' ' read -r name p dead; do
        [[ $dead == 0 && $(readlink "/proc/$p/exe" 2>/dev/null) != */bash ]] || continue
        pids[$name]+="$p "
    done < <(tmux -L "$sock" list-panes -s -t "=sidebars:" -F '#{window_name} #{pane_pid} #{pane_dead}')
    for who in "${kinds[@]}"; do
        read -r -a p <<<"${pids[$who]:-}"
        ((${#p[@]} == n_side)) || {
            tmux -L "$sock" list-panes -s -t "=sidebars:" -F '#{window_name} #{pane_id} #{pane_dead} #{pane_current_command}' >&2
            bench_die "sidebars: ${#p[@]} of $n_side $who sidebars run"
        }
    done
    kill -0 "$mon_pid" 2>/dev/null || bench_die "sidebars: orange monitor exited: $(cat "$tmp/monitor.out")"
    bench_now t0
    s0=$(counted tmux sidebar-orange) g0=$(counted git sidebar-orange) m0=$(counted tmux monitor)
    sleep "$window"
    s1=$(counted tmux sidebar-orange) g1=$(counted git sidebar-orange) m1=$(counted tmux monitor)
    bench_now t1
    for who in "${kinds[@]}"; do
        : >"$tmp/mem.$who"
        for p in ${pids[$who]}; do mem_of "$p" >>"$tmp/mem.$who"; done
    done
    kill "$mon_pid" 2>/dev/null || true
    wait "$mon_pid" 2>/dev/null || true
    tmux -L "$sock" kill-session -t "=sidebars" 2>/dev/null || true
    local secs sps mps tps gps rss_med rss_max
    secs=$(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.2f", ns / 1e9 }')
    per_s() { awk -v c="$1" -v s="$secs" 'BEGIN { printf "%.2f", c / s }'; }
    sps=$(per_s $((s1 - s0)))
    mps=$(per_s $((m1 - m0)))
    tps=$(per_s $((s1 - s0 + m1 - m0)))
    gps=$(per_s $((g1 - g0)))
    note "  $n_side sidebars + orange monitor, ${secs}s: sidebars $((s1 - s0)) tmux ($sps/s) and $((g1 - g0)) git ($gps/s); monitor $((m1 - m0)) tmux ($mps/s)"
    for who in "${kinds[@]}"; do
        note "  $who sidebar memory, medians of $(mem_stat "$tmp/mem.$who" 1 n) (kB): VmRSS $(mem_stat "$tmp/mem.$who" 1) (max $(mem_stat "$tmp/mem.$who" 1 max)) = RssAnon $(mem_stat "$tmp/mem.$who" 2) + RssFile $(mem_stat "$tmp/mem.$who" 3), of which its own binary $(mem_stat "$tmp/mem.$who" 5); Pss $(mem_stat "$tmp/mem.$who" 4)"
    done
    rss_med=$(mem_stat "$tmp/mem.orange" 1)
    rss_max=$(mem_stat "$tmp/mem.orange" 1 max)
    row "$n_side sidebars + monitor: tmux processes/s" "$tps /s" "-" "-" "≤ 1 /s" "$(verdict "$tps" le 1)"
    row "  the $n_side sidebars alone" "$sps /s" "-" "-" "≤ 1 /s" "$(verdict "$sps" le 1)"
    local base_rss="-" ratio="-" base_anon="-" anon_ratio="-"
    if [[ -n $base_bin ]]; then
        base_rss=$(mb "$(mem_stat "$tmp/mem.base" 1)")
        ratio=$(ratio_of "$rss_med" "$(mem_stat "$tmp/mem.base" 1)")x
        base_anon=$(mb "$(mem_stat "$tmp/mem.base" 2)")
        anon_ratio=$(ratio_of "$(mem_stat "$tmp/mem.orange" 2)" "$(mem_stat "$tmp/mem.base" 2)")x
    fi
    row "  one sidebar's RSS (median of $n_side, $agents agents)" "$(mb "$rss_med")" "$base_rss" "$ratio" \
        "≤ 6 MB" "$(verdict "$rss_med" le 6144)"
    row "    of which private (RssAnon)" "$(mb "$(mem_stat "$tmp/mem.orange" 2)")" "$base_anon" "$anon_ratio" "-" "-"
    : "$rss_max"
    note "  (load at end: $(load))"
}

# ---------------------------------------------------------------------------------------
# 5. firstframe
# ---------------------------------------------------------------------------------------
figure_firstframe() {
    local ws files n i tracked untracked frame r prep
    bench_log "firstframe: fixture (5,000 files, 1,000 changed)"
    note "firstframe (load at start: $(load))"
    fresh firstframe 5000 50
    new_task "frame/t1"
    # The task's workspace (its name in `task show`, its path in `workspace list`).
    ws=$("$ORANGE" task show "$id" --json >"$tmp/show.json" &&
        "$ORANGE" workspace list --json >"$tmp/ws.json" &&
        python3 - "$tmp/show.json" "$tmp/ws.json" <<'PY'
import json, sys
show = json.load(open(sys.argv[1]))
task = show.get("task", show) if isinstance(show, dict) else {}
name = task.get("workspace")
wss = json.load(open(sys.argv[2]))
if isinstance(wss, dict):
    wss = wss.get("workspaces", [])
for w in wss:
    if w.get("name") == name or w.get("task") == task.get("id"):
        print(w.get("path", ""))
        break
PY
    ) || bench_die "firstframe: cannot read task $id's workspace"
    [[ -d $ws/.git || -f $ws/.git ]] || bench_die "firstframe: no workspace found for task $id ($ws)"
    cd "$ws"
    mapfile -t files < <(git ls-files 'pkg*')
    # 1,000 uncommitted changes (so HEAD is the merge base and `git diff HEAD` sees them
    # all): 600 modified, 100 modified and staged, 100 deleted, 100 renamed, 100 untracked.
    i=0
    for ((n = 0; n < 600; n++, i++)); do printf 'changed by the task %d\n' "$n" >>"${files[i]}"; done
    for ((n = 0; n < 100; n++, i++)); do
        printf 'staged change %d\n' "$n" >>"${files[i]}"
    done
    git add -- "${files[@]:600:100}"
    git rm --quiet -- "${files[@]:700:100}"
    for ((n = 800; n < 900; n++)); do git mv -- "${files[n]}" "${files[n]%.rs}_moved.rs"; done
    mkdir -p scratch
    for ((n = 0; n < 100; n++)); do printf 'untracked %d\n' "$n" >"scratch/u$n.txt"; done
    tracked=$(git diff --name-status HEAD | wc -l)
    untracked=$(git status --porcelain --untracked-files=all | grep -c '^??' || true)
    ((tracked + untracked == 1000)) ||
        bench_die "firstframe: the fixture has $tracked tracked + $untracked untracked changes, not 1,000"
    note "  workspace $ws: $(git ls-files | wc -l) tracked files; git diff HEAD: $tracked, untracked: $untracked"
    cd "$repo"
    # Only the sidebar's line-count cache goes (whatever its name under run/).
    prep="$tmp/firstframe-prep.sh"
    printf '#!/bin/sh\nfind "%s/run" -maxdepth 1 -name "*sidebar*" -exec rm -rf {} + 2>/dev/null\nexit 0\n' \
        "$ORANGE_HOME" >"$prep"
    chmod +x "$prep"
    settle
    frame=$("$ORANGE" sidebar --task "$id" --once) || bench_die "sidebar --once failed"
    grep -q 'Files (1000)' <<<"$frame" || note "  warning: the frame does not say 'Files (1000)': $(grep -m1 Files <<<"$frame" || true)"
    compare firstframe "$runs" "$(q "$ORANGE" sidebar --task "$id" --once)" \
        "$(q git -C "$ws" diff --name-status HEAD) && $(q git -C "$ws" status --porcelain)" "$(q "$prep")"
    r=$(ratio_of "$om" "$bm")
    row "sidebar first frame, 1,000 of 5,000 changed" "$(ms "$om")" "diff+status $(ms "$bm")" "${r}x" \
        "≤ 1.0x" "$(verdict "$r" le 1.0)"
    note "  (load at end: $(load))"
}

# ---------------------------------------------------------------------------------------
# Run
# ---------------------------------------------------------------------------------------
timing="loop (\$EPOCHREALTIME), interleaved"
((have_hyperfine)) && timing="hyperfine $(hyperfine --version | awk '{ print $2 }')"
note "orange bench — figures: ${figures[*]}; binary: $ORANGE ($("$ORANGE" --version 2>/dev/null || echo '?'))"
note "$(bench_machine_line "$tmp"), tmux $("$real_tmux" -V | awk '{ print $2 }')"
note "runs: $runs per measure (status: $status_runs), warm-up $warmup; timing: $timing; strace: $((have_strace)); nice: $(nice)"

want monitor && figure_monitor
if want status || want create; then figure_tasks; fi
want sidebars && figure_sidebars
want firstframe && figure_firstframe

echo
cat "$details"
echo
{
    printf 'figure\torange\tbaseline\tratio (orange/baseline)\ttarget\tverdict\n'
    cat "$results"
} | bench_print_table
echo
echo "(total $((SECONDS - started))s including fixtures)"
