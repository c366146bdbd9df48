#!/usr/bin/env bash
# bench.sh — every benchmark of orange in one run, one table: orange's median, the
# baseline's, the ratio (baseline / orange; above 1 = orange is faster).
#   pool     acquire/release from the warm pool vs git worktree add/remove (5,000 files)
#   task     task create → agent running vs worktree add -b + tmux new-session
#   status   orange status --format tmux (100 tasks, 5 projects) vs tmux display -p
#   sidebar  one sidebar frame (1,000 changed files) vs git diff --name-status + git status
#   monitor  one monitor pass over 50 sessions vs 50 capture-panes (+ processes spawned)
# Usage: scripts/bench.sh [NAME...]   (default: all). Iteration counts: see each script.
set -euo pipefail
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

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
