#!/usr/bin/env bash
# bench-reconcile.sh — what the reconcile pass (src/orchestration/reconcile.rs) adds to a command.
# Every task/workspace/lane command starts with it: one `tmux list-sessions` with the
# session marks, then per project with marked sessions or bound workspaces the project's
# task lock and its task.json files (and one `tmux display -p` for the server identity).
#
# Fixture: a repository, `orange project add --pool-size N`, and N (BENCH_TASKS, default
# 10) tasks made with `orange task create` whose agent only sleeps, so N live marked
# sessions exist and nothing needs repairing. Measured, interleaved (order rotated):
#   tmux        `tmux list-sessions -F '#{session_id} #{@orange_task} #{@orange_home}'`
#               (the one tmux call reconciliation adds; the baseline)
#   off         `orange task list --json` with ORANGE_RECONCILE=0 (pass skipped)
#   on          `orange task list --json` (pass on, the default)
# Reported: medians and p90s, the added cost (on − off, both as the difference of the
# medians and as the median of the per-iteration differences), on/off, and
# (on − off)/tmux: how many bare tmux calls the pass costs. With strace installed, also
# the processes each variant spawns.
#
# Usage: scripts/bench-reconcile.sh [--json]
# Environment: ORANGE_BIN, BENCH_TASKS (10), BENCH_ITERS (default 200), BENCH_WARMUP
#   (default 10), BENCH_KEEP=1
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh disable=SC1091 # (followed with shellcheck -x)
. "$script_dir/lib-bench.sh"

json=0 tmp="" # set by bench_args and bench_workspace
bench_args "$@"
ntasks=${BENCH_TASKS:-10}
iters=${BENCH_ITERS:-200}
warmup=${BENCH_WARMUP:-10}
bench_start=${SECONDS}
[[ $ntasks =~ ^[1-9][0-9]*$ ]] || bench_die "BENCH_TASKS must be a positive number"
[[ $iters =~ ^[1-9][0-9]*$ ]] || bench_die "BENCH_ITERS must be a positive number"
[[ $warmup =~ ^[0-9]+$ ]] || bench_die "BENCH_WARMUP must be a number"

command -v tmux >/dev/null || bench_die "tmux not found"
bench_build_orange "$root"
sock="orange-bench-reconcile-$$"
# Temp dir, ORANGE_HOME, ORANGE_TMUX_SOCKET=$sock, samples; the exit trap kills the
# private tmux server and removes the dir (BENCH_KEEP=1 keeps it).
bench_workspace bench-reconcile "$sock"
unset ORANGE_RECONCILE

bench_log "creating a repository"
repo=$(bench_make_repo "$tmp" 200 10)
tmux -L "$sock" -f /dev/null new-session -d -s keepalive
# The agent only waits. `:` swallows the prompt orange passes ({prompt} would be appended
# to the command line when absent, and `sleep 3600 'task 1'` fails).
cat >"$ORANGE_HOME/config.toml" <<'TOML'
[harness.sleeper]
command = ": {prompt}; exec sleep 3600"
[policy]
idle_grace = "1h"
TOML
cd "$repo"
"$ORANGE" project add "$repo" --name b --pool-size "$ntasks" >&2
bench_log "starting $ntasks task sessions"
for ((i = 1; i <= ntasks; i++)); do
    "$ORANGE" task create "b/$i" "task $i" --harness sleeper >/dev/null ||
        bench_die "orange task create b/$i failed"
done

# The fixture is what we think: N marked sessions of this ORANGE_HOME, N tasks listed,
# and a reconcile pass that finds nothing to repair (a repair would be timed once only).
marked=$(tmux -L "$sock" list-sessions -F '#{@orange_task} #{@orange_home}' |
    awk -v h="$ORANGE_HOME" '$1 != "" && $2 == h' | wc -l)
((marked == ntasks)) || bench_die "$marked marked sessions, expected $ntasks"
"$ORANGE" task list --json >"$tmp/list.json" 2>"$tmp/list.err" || bench_die "orange task list failed"
listed=$(grep -o '"id":' "$tmp/list.json" | wc -l)
((listed >= ntasks)) || bench_die "orange task list shows $listed ids, expected $ntasks: $(head -c 400 "$tmp/list.json")"
[[ ! -s "$tmp/list.err" ]] || bench_die "reconcile said something (a repair?): $(cat "$tmp/list.err")"

# Prefix assignments, not `env`: no extra process in the timed command.
orange_off() { ORANGE_RECONCILE=0 "$ORANGE" "$@"; }
orange_on() { "$ORANGE" "$@"; }

one() { # one MODE KEY CMD...: time CMD, record it under KEY (MODE record), echo ns
    local mode=$1 key=$2 t
    shift 2
    bench_time t "$@" || bench_die "failed: $*"
    [[ $mode == record ]] && bench_record "$key" "$t"
    last=$t
}

measure() { # measure MODE WHICH
    case $2 in
    tmux) one "$1" tmux tmux -L "$sock" list-sessions -F '#{session_id} #{@orange_task} #{@orange_home}' ;;
    off) one "$1" off orange_off task list --json ;;
    on) one "$1" on orange_on task list --json ;;
    esac
    printf -v "ns_$2" '%s' "$last"
}

iteration() {
    local mode=$1 i=$2 order w
    case $((i % 3)) in
    0) order="tmux off on" ;;
    1) order="off on tmux" ;;
    *) order="on tmux off" ;;
    esac
    for w in $order; do measure "$mode" "$w"; done
    # The pass's cost in this iteration, paired (on and off ran next to each other).
    [[ $mode == record ]] && bench_record added "$((ns_on - ns_off))"
    return 0
}

run() {
    local mode=$1 k=$2 i
    for ((i = 0; i < k; i++)); do iteration "$mode" "$i"; done
}
last=0 ns_off=0 ns_on=0
bench_log "warm-up: $warmup"
run warmup "$warmup"
bench_log "measuring: $iters"
run record "$iters"

# Processes spawned (successful execve, minus the traced program itself) per variant.
procs_off=null procs_on=null
count_procs() {
    strace -f -qq -e trace=execve -o "$tmp/strace.out" "$@" >/dev/null 2>&1 || return 1
    echo $(($(grep -c 'execve(.*) = 0' "$tmp/strace.out") - 1))
}
if command -v strace >/dev/null; then
    procs_off=$(ORANGE_RECONCILE=0 count_procs "$ORANGE" task list --json) || procs_off=null
    procs_on=$(count_procs "$ORANGE" task list --json) || procs_on=null
    [[ $procs_on == null ]] || cp "$tmp/strace.out" "$tmp/strace-on.out"
fi

[[ -z "$(cat "$BENCH_STDERR")" ]] || bench_log "last command's stderr: $(cat "$BENCH_STDERR")"

ms() { bench_ms "$(bench_stat "$1" "$2")"; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "null"; else printf "%.2f\n", a / b }'; }
tm=$(bench_stat tmux median) tp=$(bench_stat tmux p90)
fm=$(bench_stat off median) fp=$(bench_stat off p90)
nm=$(bench_stat on median) np=$(bench_stat on p90)
am=$(bench_stat added median) ap=$(bench_stat added p90)
n=$(bench_stat on n)
added=$((nm - fm))
ratio_on_off=$(div "$nm" "$fm")
ratio_added_tmux=$(div "$added" "$tm")
ratio_paired_tmux=$(div "$am" "$tm")

if ((json)); then
    bench_machine_line "$tmp" >&2
    printf '{"sessions":%s,"iterations":%s,' "$ntasks" "$n"
    printf '"tmux_list_sessions":{"median_ms":%s,"p90_ms":%s},' "$(bench_ms "$tm")" "$(bench_ms "$tp")"
    printf '"task_list_reconcile_off":{"median_ms":%s,"p90_ms":%s,"processes":%s},' \
        "$(bench_ms "$fm")" "$(bench_ms "$fp")" "$procs_off"
    printf '"task_list_reconcile_on":{"median_ms":%s,"p90_ms":%s,"processes":%s},' \
        "$(bench_ms "$nm")" "$(bench_ms "$np")" "$procs_on"
    printf '"added_ms":%s,"added_paired_median_ms":%s,"added_paired_p90_ms":%s,' \
        "$(bench_ms "$added")" "$(bench_ms "$am")" "$(bench_ms "$ap")"
    printf '"ratio_on_over_off":%s,"ratio_added_over_tmux":%s,"ratio_paired_added_over_tmux":%s}\n' \
        "$ratio_on_off" "$ratio_added_tmux" "$ratio_paired_tmux"
else
    printf 'reconcile pass cost — %s live marked task sessions, 1 project, %s iterations (+%s warm-up)\n' \
        "$ntasks" "$n" "$warmup"
    bench_machine_line "$tmp"
    echo
    {
        printf 'measure\tmedian ms\tp90 ms\tprocesses\n'
        printf '(a) tmux list-sessions -F (marks)\t%s\t%s\t%s\n' "$(bench_ms "$tm")" "$(bench_ms "$tp")" 1
        printf '(b) orange task list --json, ORANGE_RECONCILE=0\t%s\t%s\t%s\n' \
            "$(bench_ms "$fm")" "$(bench_ms "$fp")" "${procs_off/null/n\/a}"
        printf '(c) orange task list --json (reconcile on)\t%s\t%s\t%s\n' \
            "$(bench_ms "$nm")" "$(bench_ms "$np")" "${procs_on/null/n\/a}"
        printf '(c - b) paired, per iteration\t%s\t%s\t\n' "$(bench_ms "$am")" "$(bench_ms "$ap")"
    } | bench_print_table
    echo
    printf 'added by reconcile: %s ms (median c − median b); c/b = %sx; (c − b)/a = %s tmux calls\n' \
        "$(bench_ms "$added")" "$ratio_on_off" "$ratio_added_tmux"
    if [[ -s "$tmp/strace-on.out" ]]; then
        echo "processes spawned with reconcile on:"
        grep 'execve(.*) = 0' "$tmp/strace-on.out" | sed -n '2,$p' |
            sed 's/^[0-9]* *execve("[^"]*", \[\(.*\)\], .*/  \1/' | cut -c1-110 | sort | uniq -c
    fi
    echo "(total run time $((SECONDS - bench_start))s, including build and fixture)"
fi
