#!/usr/bin/env bash
# bench-usage.sh — token use costs a monitor pass nothing once read: steady-state
# `orange monitor --once` passes over N (default 20) live claude tasks whose transcripts
# hold MB (default 50) megabytes in all, against the same tasks with empty transcripts;
# and the cost of the first pass, the one that reads every transcript once. With strace,
# also the bytes a pass reads from the transcripts.
#
# The tasks are real `claude` tasks (orange gives each a conversation id and a workspace)
# whose `claude` is a stand-in on PATH that only waits; each transcript is written where
# Claude Code writes it ($CLAUDE_CONFIG_DIR/projects/<workspace>/<conversation>.jsonl), in
# Claude Code 2.1's shape: per answer a tool result, two assistant lines of one message
# (same id and usage) and a bookkeeping line.
#
# Usage: scripts/bench-usage.sh [--json]
# Environment: ORANGE_BIN, BENCH_TASKS (20), BENCH_MB (50), BENCH_ITERS (15), BENCH_KEEP=1
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

bench_args "$@"
ntasks=${BENCH_TASKS:-20}
mb=${BENCH_MB:-50}
iters=${BENCH_ITERS:-15}

bench_build_orange "$root"
sock="orange-bench-usage-$$"
bench_workspace bench-usage "$sock"

repo=$(bench_make_repo "$tmp" 50 5)
export CLAUDE_CONFIG_DIR="$tmp/claude-config"
mkdir -p "$CLAUDE_CONFIG_DIR" "$tmp/bin"
# The stand-in claude: waits, like a claude waiting for input.
cat >"$tmp/bin/claude" <<'SH'
#!/bin/sh
exec sleep 100000
SH
chmod +x "$tmp/bin/claude"
export PATH="$tmp/bin:$PATH"
tmux -L "$sock" -f /dev/null new-session -d -s keepalive
tmux -L "$sock" set-environment -g PATH "$PATH"
cat >"$ORANGE_HOME/config.toml" <<'TOML'
[policy]
idle_grace = "1h"
TOML
cd "$repo"
"$ORANGE" project add "$repo" --name bench --pool-size "$ntasks" >&2
bench_log "starting $ntasks claude tasks"
# The first string value of KEY in a JSON file (orange prints one compact line).
field() {
    grep -o "\"$1\":\"[^\"]*\"" "$2" | head -n 1 | cut -d '"' -f 4
}
transcripts=()
for ((i = 1; i <= ntasks; i++)); do
    "$ORANGE" task create "bench/t$i" "task $i" --harness claude --json >"$tmp/created.json"
    id=$(field id "$tmp/created.json")
    [[ -n $id ]] || bench_die "no task id in: $(cat "$tmp/created.json")"
    "$ORANGE" task show "$id" --json >"$tmp/show.json"
    conv=$(field agent_session_id "$tmp/show.json")
    ws_name=$(field workspace "$tmp/show.json")
    [[ -n $conv && -n $ws_name ]] || bench_die "task $id has no conversation or workspace"
    ws=$(cd "$ORANGE_HOME/workspaces/$ws_name" && pwd -P)
    dir="$CLAUDE_CONFIG_DIR/projects/$(printf '%s' "$ws" | tr '/.' '--')"
    mkdir -p "$dir"
    : >"$dir/$conv.jsonl"
    transcripts+=("$dir/$conv.jsonl")
done

# One transcript of about MB/N megabytes, copied to every task: per answer a user line
# with a 2 KB tool result, two assistant lines of one message, one bookkeeping line.
per_task=$((mb * 1024 * 1024 / ntasks))
pad=$(head -c 2048 /dev/zero | tr '\0' 'x')
answer() {
    local n=$1
    printf '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%s","content":"%s"}]},"timestamp":"2030-01-01T00:00:00.000Z"}\n' "$n" "$pad"
    local usage='"usage":{"input_tokens":3,"cache_creation_input_tokens":120,"cache_read_input_tokens":24000,"output_tokens":150,"service_tier":"standard"}'
    printf '{"type":"assistant","message":{"id":"msg_%s","type":"message","role":"assistant","content":[{"type":"text","text":"Looking at it."}],"stop_reason":null,%s},"timestamp":"2030-01-01T00:00:00.000Z"}\n' "$n" "$usage"
    printf '{"type":"assistant","message":{"id":"msg_%s","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_%s","name":"Bash","input":{"command":"ls"}}],"stop_reason":"tool_use",%s},"timestamp":"2030-01-01T00:00:00.000Z"}\n' "$n" "$n" "$usage"
    printf '{"type":"last-prompt","lastPrompt":"task","sessionId":"s"}\n'
}
bench_log "writing one ${per_task}-byte transcript"
one="$tmp/one.jsonl"
n=0
: >"$one"
while (($(stat -c %s "$one") < per_task)); do
    {
        for ((k = 0; k < 20; k++)); do
            n=$((n + 1))
            answer "$n"
        done
    } >>"$one"
done
# It ends on a finished turn (waiting for input), like a claude at rest.
printf '{"type":"assistant","message":{"id":"msg_end","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":3,"cache_creation_input_tokens":120,"cache_read_input_tokens":24000,"output_tokens":150}},"timestamp":"2030-01-01T00:00:00.000Z"}\n' >>"$one"
answers=$((n + 1))

# Bytes read from transcripts by one pass (strace: read/pread64 on files under projects/).
transcript_bytes() {
    command -v strace >/dev/null || {
        echo "n/a"
        return
    }
    strace -f -qq -y -e trace=read,pread64 -o "$tmp/strace.out" "$ORANGE" monitor --once >/dev/null
    awk -v d="$CLAUDE_CONFIG_DIR/projects/" 'index($0, d) { n = $NF; if (n ~ /^[0-9]+$/) s += n } END { print s + 0 }' "$tmp/strace.out"
}

bench_log "empty transcripts: $iters passes"
"$ORANGE" monitor --once >/dev/null # warm-up (agent.json, usage.json written)
for ((i = 1; i <= iters; i++)); do
    bench_time t "$ORANGE" monitor --once || bench_die "monitor pass failed"
    bench_record pass.empty "$t"
done
empty_bytes=$(transcript_bytes)

bench_log "filling the transcripts: $ntasks x $(stat -c %s "$one") bytes"
for f in "${transcripts[@]}"; do cp "$one" "$f"; done
total=$(cat "${transcripts[@]}" | wc -c)
first=0
bench_time first "$ORANGE" monitor --once || bench_die "first pass failed"
bench_log "full transcripts: $iters passes"
for ((i = 1; i <= iters; i++)); do
    bench_time t "$ORANGE" monitor --once || bench_die "monitor pass failed"
    bench_record pass.full "$t"
done
full_bytes=$(transcript_bytes)

# The tokens orange counted: every task's, summed by the status.
"$ORANGE" status --format json >"$tmp/status.json"
output=$(sed -n 's/.*"tokens":{[^}]*"output":\([0-9]*\).*/\1/p' "$tmp/status.json")
want=$((answers * 150 * ntasks))
[[ $output == "$want" ]] || bench_die "counted $output output tokens, expected $want"

BENCH_LABEL[pass]="steady-state monitor pass, $ntasks tasks: $((total / 1048576)) MB of transcripts vs empty"
if ((json)); then
    bench_machine_line "$tmp" >&2
    bench_compare_json full empty pass | sed "s/}}\$/,\"first_pass_ms\":$(bench_ms "$first"),\"transcript_bytes\":$total,\"steady_pass_bytes_read\":\"$full_bytes\",\"empty_pass_bytes_read\":\"$empty_bytes\"}}/"
else
    printf 'orange monitor --once: %s claude tasks, %s MB of transcripts (%s answers each) vs empty, %s iterations\n' \
        "$ntasks" "$((total / 1048576))" "$answers" "$iters"
    bench_machine_line "$tmp"
    echo
    bench_compare_table full empty pass
    echo
    printf 'first pass (reads all %s bytes once): %s ms\n' "$total" "$(bench_ms "$first")"
    printf 'bytes read from transcripts by one steady-state pass: %s (empty transcripts: %s)\n' "$full_bytes" "$empty_bytes"
    printf 'output tokens counted: %s (as written)\n' "$output"
fi
