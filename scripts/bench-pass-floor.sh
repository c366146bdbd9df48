#!/usr/bin/env bash
# bench-pass-floor.sh — where the time of one pass of the running monitor goes, over N
# (default 200) live task sessions, next to a bare `tmux list-panes -a` in the same run:
#
#   pass        the pass as the running monitor makes it: `orange monitor --passes 6`,
#               the median of the last five (nothing changed between them)
#   its call    the one tmux command that pass runs (its exact arguments, caught by a
#               `tmux` wrapper first on PATH), run from here: the pass cannot be faster
#   list-panes  a bare `tmux list-panes -a` (the target's baseline: pass ≤ 1.5× it)
#   display     `tmux display -p x`: a tmux client's start and round trip, no listing
#
# timed interleaved (a loop reading $EPOCHREALTIME), medians and the spread (min–max);
# then the CPU time of a steady pass (orange and its tmux client, and the tmux server's)
# against a bare list-panes', which load inflates far less; then, with valgrind installed, the instructions (callgrind, Ir) of one pass in orange's
# own process (the difference between `--passes 11` and `--passes 1`, over 10), of the
# tmux client of its call and of a bare list-panes client. The tmux server's side (the
# listing it formats) shows in the wall times only.
#
# Usage: scripts/bench-pass-floor.sh
# Environment: ORANGE_BIN, BENCH_TASKS (200), BENCH_ITERS (15), BENCH_KEEP=1,
#   BENCH_CALLGRIND=FILE  keep the profile of `--passes 11` there (for callgrind_annotate)
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

ntasks=${BENCH_TASKS:-200}
iters=${BENCH_ITERS:-15}
bench_build_orange "$root"
sock="orange-bench-floor-$$"
bench_workspace bench-floor "$sock"

repo=$(bench_make_repo "$tmp" 200 10)
tmux -L "$sock" -f /dev/null new-session -d -s keepalive
cat >"$ORANGE_HOME/config.toml" <<'TOML'
[harness.idle]
command = "sleep 86400 #"
[policy]
idle_grace = "24h"
TOML
cd "$repo"
"$ORANGE" project add "$repo" --name bench --pool-size "$ntasks" >/dev/null
bench_log "starting $ntasks task sessions"
for ((i = 1; i <= ntasks; i++)); do
    "$ORANGE" task create "bench/t$i" "task $i" --harness idle >/dev/null
done
sync
"$ORANGE" monitor --once >/dev/null # the first pass writes every agent.json

# The pass's own tmux command, as it runs it: a wrapper first on PATH writes its arguments.
real_tmux=$(command -v tmux)
mkdir -p "$tmp/bin"
cat >"$tmp/bin/tmux" <<EOF
#!/usr/bin/env bash
printf '%q ' "\$@" >>"$tmp/tmux-args"
printf '\n' >>"$tmp/tmux-args"
exec "$real_tmux" "\$@"
EOF
chmod +x "$tmp/bin/tmux"
PATH="$tmp/bin:$PATH" "$ORANGE" monitor --passes 2 >/dev/null
calls=$(wc -l <"$tmp/tmux-args")
# The last pass's call (the first pass asks the sessions' marks too).
call=()
eval "call=($(tail -n 1 "$tmp/tmux-args"))"

# ms_of KEY: the samples recorded under KEY, in ms, one a line.
ms_of() { awk '{printf "%.3f\n", $1 / 1e6}' "$(_bench_samples_file "$1")"; }
passes=() t=0
for ((i = 1; i <= iters; i++)); do
    out=$("$ORANGE" monitor --passes 6 --json | tr -d ' \n')
    out=$(sed -n 's/.*"pass_ms":\[\([0-9.,]*\)\].*/\1/p' <<<"$out")
    IFS=, read -r -a got <<<"${out#*,}"
    passes+=("${got[@]}")
    bench_time t "$real_tmux" "${call[@]}" || bench_die "the pass's call failed"
    bench_record call "$t"
    bench_time t "$real_tmux" -L "$sock" list-panes -a || bench_die "list-panes failed"
    bench_record listpanes "$t"
    bench_time t "$real_tmux" -L "$sock" display -p x || bench_die "display failed"
    bench_record display "$t"
done
# stats: the median of the numbers on stdin, their min–max and count.
stats() { sort -n | awk '{a[NR]=$1} END {printf "%.2f ms (%.2f–%.2f, n=%d)", (a[int((NR+1)/2)] + a[int(NR/2)+1]) / 2, a[1], a[NR], NR}'; }
lp=$(ms_of listpanes | stats)
printf '%s live task sessions, %s runs, load %s; tmux calls in two passes: %s\n' \
    "$ntasks" "$iters" "$(cut -d' ' -f1-3 /proc/loadavg)" "$calls"
printf '  pass in the monitor        %s\n' "$(printf '%s\n' "${passes[@]}" | stats)"
printf '  its one tmux call, alone   %s\n' "$(ms_of call | stats)"
printf '  tmux list-panes -a         %s\n' "$lp"
printf '  tmux display -p x          %s\n' "$(ms_of display | stats)"

# CPU time, which the load on a shared machine inflates far less than the wall times:
# orange's and its tmux clients' (bash's `time`, children included) and the tmux server's
# (its utime + stime in /proc, in clock ticks), over `reps` passes or listings.
reps=100
server_pid=$("$real_tmux" -L "$sock" display -p '#{pid}')
hz=$(getconf CLK_TCK)
server_ms() { awk -v hz="$hz" '{printf "%.0f\n", ($14 + $15) * 1000 / hz}' "/proc/$server_pid/stat"; }
# cpu_ms CMD...: sets own (ms of CMD's process and its children) and srv (the server's ms).
cpu_ms() {
    local s0 times TIMEFORMAT='%3U %3S'
    s0=$(server_ms)
    times=$({ time "$@" >/dev/null 2>&1; } 2>&1)
    srv=$(($(server_ms) - s0))
    own=$(awk '{printf "%.0f", ($1 + $2) * 1000}' <<<"$times")
}
listings() { for ((i = 0; i < reps; i++)); do "$real_tmux" -L "$sock" list-panes -a; done; }
cpu_ms "$ORANGE" monitor --passes 1
own1=$own srv1=$srv
cpu_ms "$ORANGE" monitor --passes $((reps + 1))
pass_own=$(awk -v a="$own" -v b="$own1" -v n="$reps" 'BEGIN {printf "%.2f", (a - b) / n}')
pass_srv=$(awk -v a="$srv" -v b="$srv1" -v n="$reps" 'BEGIN {printf "%.2f", (a - b) / n}')
cpu_ms listings
lp_own=$(awk -v a="$own" -v n="$reps" 'BEGIN {printf "%.2f", a / n}')
lp_srv=$(awk -v a="$srv" -v n="$reps" 'BEGIN {printf "%.2f", a / n}')
printf 'CPU time, %s each (ms: orange or the tmux client, + the tmux server)\n' "$reps"
printf '  one steady pass            %s + %s\n' "$pass_own" "$pass_srv"
printf '  tmux list-panes -a         %s + %s\n' "$lp_own" "$lp_srv"
printf '  ratio                      %s\n' "$(awk -v a="$pass_own" -v b="$pass_srv" -v c="$lp_own" -v d="$lp_srv" 'BEGIN {printf "%.2f", (a + b) / (c + d)}')"

command -v valgrind >/dev/null || exit 0
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : *//p'; }
one=$(ir "$ORANGE" monitor --passes 1)
eleven=$(ir "$ORANGE" monitor --passes 11)
if [[ -n ${BENCH_CALLGRIND:-} ]]; then
    valgrind --tool=callgrind --callgrind-out-file="$BENCH_CALLGRIND" "$ORANGE" monitor --passes 11 \
        >/dev/null 2>&1
fi
printf 'instructions (callgrind Ir)\n'
printf '  orange, one steady pass    %s\n' "$(((eleven - one) / 10))"
printf '  orange, process + 1 pass   %s\n' "$one"
printf '  tmux client, its call      %s\n' "$(ir "$real_tmux" "${call[@]}")"
printf '  tmux client, list-panes -a %s\n' "$(ir "$real_tmux" -L "$sock" list-panes -a)"
