#!/usr/bin/env bash
# bench-pty.sh — what the pty layer (`orange-pty`, `status_reports = true`) adds to an
# agent's output, and its memory.
#
# A producer on a pseudo-terminal writes N chunks of screen output (ANSI-coloured text as
# an agent's redraw is); the reader on the other side reads each whole chunk and answers
# one byte, which the producer waits for before its next chunk (ping-pong: every chunk's
# full trip is timed, never a pipeline that hides it). The same, in the same run, with
# the producer under the layer: the difference per round trip is what the layer adds to
# one chunk (an upper bound: it also relays the one-byte answer). Then the same with an
# OSC 7501 report in every chunk, each a new state (the layer writes its status file
# every time; an agent reports only when its state changes). Runs alternate plain and
# layered, BENCH_RUNS times; medians are printed.
#
# Memory (VmRSS of the layer with a real claude under it) is measured by hand: see
# docs/performance.md.
#
# Usage: scripts/bench-pty.sh
# Environment: ORANGE_PTY_BIN (default: cargo build --release --bin orange-pty),
#              BENCH_CHUNKS (2000), BENCH_SIZE (2048 bytes), BENCH_RUNS (5)
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
layer=${ORANGE_PTY_BIN:-}
if [[ -z "$layer" ]]; then
    (cd "$root" && cargo build --release --quiet --bin orange-pty)
    layer="$root/target/release/orange-pty"
fi
[[ -x "$layer" ]] || { echo "no orange-pty at $layer" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$layer" "$tmp/status" "${BENCH_CHUNKS:-2000}" "${BENCH_SIZE:-2048}" \
    "${BENCH_RUNS:-5}" <<'PY'
import os, pty, statistics, sys, time

layer, status, n, size, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])

# The producer: raw terminal, N chunks of SIZE bytes each ending in "!", one byte awaited
# after each. With REPORT, an OSC 7501 report (a new state each time) opens every chunk.
PRODUCER = r'''
import os, sys, tty
tty.setraw(0)
n, size, report = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
line = b"\x1b[38;5;211m\xe2\x94\x80\xe2\x94\x80 agent output \x1b[39m\x1b[2C"
body = (line * (size // len(line) + 1))
for i in range(n):
    head = b"\x1b]7501;state=working:app=bench:progress=%d\x07" % (i % 100) if report else b""
    chunk = (head + body)[: size - 1] + b"!"
    os.write(1, chunk)
    os.read(0, 1)
'''

def run(layered, report):
    argv = ["python3", "-c", PRODUCER, str(n), str(size), "1" if report else "0"]
    if layered:
        argv = [layer, status, "--"] + argv
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    import tty
    tty.setraw(fd)  # our side: no echo, no translation
    times = []
    for i in range(n):
        got = 0
        t0 = time.perf_counter_ns()
        while got < size:
            got += len(os.read(fd, 65536))
        os.write(fd, b"k")
        times.append(time.perf_counter_ns() - t0)
    os.waitpid(pid, 0)
    os.close(fd)
    # The first chunks include the start (the layer's and python's): not a chunk's cost.
    return statistics.median(times[20:]), sum(times[20:]) / len(times[20:])

rows = {}
for r in range(runs):
    for layered in (False, True):
        for report in (False, True):
            if report and not layered:
                continue
            rows.setdefault((layered, report), []).append(run(layered, report))

def med(key, i):
    return statistics.median(v[i] for v in rows[key])

plain_m, plain_a = med((False, False), 0), med((False, False), 1)
print(f"chunks: {n} x {size} bytes, ping-pong, {runs} runs each (medians of runs)")
print(f"{'':32} {'median trip':>12} {'mean trip':>10} {'added (median)':>15} {'added (mean)':>13} {'ratio':>6}")
for key, label in [((False, False), "plain pty"), ((True, False), "under orange-pty"),
                   ((True, True), "under orange-pty, report each")]:
    m, a = med(key, 0), med(key, 1)
    print(f"{label:32} {m/1000:9.1f} µs {a/1000:7.1f} µs {(m-plain_m)/1000:12.1f} µs "
          f"{(a-plain_a)/1000:10.1f} µs {m/plain_m:5.2f}x")
PY
