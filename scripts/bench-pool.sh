#!/usr/bin/env bash
# bench-pool.sh — what orange's warm workspace pool saves over plain `git worktree`.
#
# On one repository of BENCH_FILES (default 5000) files in ~50 directories, side by side:
#   orange    `orange workspace acquire --task L` from a warm pool (after
#             `orange workspace init`), then `orange workspace release NAME`
#             (release includes its best-effort `git fetch origin main`: real cost, kept)
#   baseline  `git worktree add --detach <path> origin/main`, then
#             `git worktree remove --force <path>` of that fresh worktree
# Each step is timed on its own and as a pair (the sum of the two steps of one iteration),
# over BENCH_ITERS iterations (default 20) after 3 warm-up ones; orange and the baseline
# alternate which goes first. Prints median and p90 per measure and the ratio
# baseline/orange.
#
# Usage: scripts/bench-pool.sh [--json] [--breakdown]
#   --json       print one JSON object {measure: {orange_ms, baseline_ms, ratio, …}} on
#                stdout instead of the table (the machine line then goes to stderr)
#   --breakdown  also time, one by one, the git commands `orange workspace release` runs
# Environment:
#   ORANGE_BIN   use this binary instead of building with `cargo build --release`
#   BENCH_ITERS  measured iterations (default 20: on a VM disk where creating a file
#                costs ~0.7 ms, one baseline `worktree add` takes ~4 s)
#   BENCH_WARMUP warm-up iterations (default 3)
#   BENCH_FILES  files in the fixture repository (default 5000)
#   BENCH_DIRS   directories they are spread over (default 50)
#   BENCH_KEEP=1 keep the temporary directory (its path is printed)
# Everything (repositories, worktrees, ORANGE_HOME) lives in one mktemp -d directory,
# removed at exit.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

bench_args "$@"

iters=${BENCH_ITERS:-20}
warmup=${BENCH_WARMUP:-3}
nfiles=${BENCH_FILES:-5000}
ndirs=${BENCH_DIRS:-50}
for v in BENCH_ITERS=$iters BENCH_WARMUP=$warmup BENCH_FILES=$nfiles BENCH_DIRS=$ndirs; do
    [[ ${v#*=} =~ ^[0-9]+$ ]] || bench_die "${v%%=*} must be a non-negative integer (got '${v#*=}')"
done
((iters > 0)) || bench_die "BENCH_ITERS must be at least 1"
((ndirs > 0)) || bench_die "BENCH_DIRS must be at least 1"

bench_start=${SECONDS}

bench_build_orange "$root"

# A private tmux socket that no server ever uses: orange stays away from the user's tmux
# (the pool does not need one).
bench_workspace bench-pool private

bench_log "creating a repository of $nfiles files in $ndirs directories"
repo=$(bench_make_repo "$tmp" "$nfiles" "$ndirs")
tracked=$(git -C "$repo" ls-files | wc -l)
((tracked >= nfiles)) || bench_die "fixture has only $tracked tracked files"

bench_log "registering it with orange and warming the pool"
cd "$repo"
"$ORANGE" project add "$repo" --name bench --pool-size 2 >&2
"$ORANGE" workspace init >&2
base_commit=$(git -C "$repo" rev-parse origin/main)

mkdir -p "$tmp/wt"

# One orange iteration: acquire, release; records when $1 is "record".
orange_iteration() {
    local mode=$1 i=$2 t_acq t_rel name path
    bench_time t_acq "$ORANGE" workspace acquire --task "bench-$i" ||
        bench_die "orange workspace acquire failed"
    IFS=$'\t' read -r name path <"$BENCH_STDOUT" || true
    [[ -n "$name" && -d "$path" ]] || bench_die "unexpected acquire output: $(cat "$BENCH_STDOUT")"
    if ((i == 1)); then
        # Once: the pool really hands out a clean worktree at origin/main.
        [[ "$(git -C "$path" rev-parse HEAD)" == "$base_commit" ]] ||
            bench_die "acquired workspace $path is not at origin/main"
        [[ "$(git -C "$path" ls-files | wc -l)" -eq "$tracked" ]] ||
            bench_die "acquired workspace $path does not hold the repository's files"
    fi
    bench_time t_rel "$ORANGE" workspace release "$name" ||
        bench_die "orange workspace release $name failed"
    # Anything but a plain reset (recreated/recycled) would be a different code path.
    [[ "$(cat "$BENCH_STDOUT")" == "released $name" ]] ||
        bench_die "release took an unexpected path: $(cat "$BENCH_STDOUT")"
    if [[ $mode == record ]]; then
        bench_record acquire.orange "$t_acq"
        bench_record release.orange "$t_rel"
        bench_record pair.orange "$((t_acq + t_rel))"
    fi
}

# One baseline iteration: a fresh detached worktree, then its removal.
baseline_iteration() {
    local mode=$1 i=$2 t_add t_rm wt
    wt="$tmp/wt/$mode-$i"
    bench_time t_add git -C "$repo" worktree add --detach "$wt" origin/main ||
        bench_die "git worktree add failed"
    if ((i == 1)); then
        [[ "$(git -C "$wt" ls-files | wc -l)" -eq "$tracked" ]] ||
            bench_die "baseline worktree $wt does not hold the repository's files"
    fi
    bench_time t_rm git -C "$repo" worktree remove --force "$wt" ||
        bench_die "git worktree remove failed"
    [[ ! -e "$wt" ]] || bench_die "git worktree remove left $wt behind"
    if [[ $mode == record ]]; then
        bench_record acquire.baseline "$t_add"
        bench_record release.baseline "$t_rm"
        bench_record pair.baseline "$((t_add + t_rm))"
    fi
}

run_iterations() {
    local mode=$1 n=$2 i
    for ((i = 1; i <= n; i++)); do
        if ((i % 2)); then
            orange_iteration "$mode" "$i"
            baseline_iteration "$mode" "$i"
        else
            baseline_iteration "$mode" "$i"
            orange_iteration "$mode" "$i"
        fi
    done
}

bench_log "warm-up: $warmup iteration(s)"
run_iterations warmup "$warmup"
bench_log "measuring: $iters iteration(s)"
run_iterations record "$iters"

# Optional: the git commands release runs, one by one, in a bound workspace (as orange
# runs them: see src/adapters/git.rs unsaved_work, detach_reset_clean and fetch).
if ((breakdown)); then
    bench_log "breakdown of release: $iters iteration(s)"
    "$ORANGE" workspace acquire --task breakdown >"$BENCH_STDOUT"
    IFS=$'\t' read -r bd_name bd_path <"$BENCH_STDOUT"
    for ((i = 1; i <= iters; i++)); do
        bench_time t "$ORANGE" workspace list || bench_die "orange workspace list failed"
        bench_record "orange workspace list (process + state read)" "$t"
        bench_time t git -C "$repo" fetch --quiet --no-tags origin main || bench_die "git fetch failed"
        bench_record "git fetch --no-tags origin main" "$t"
        bench_time t git -C "$bd_path" status --porcelain=v1 -z --untracked-files=normal ||
            bench_die "git status failed"
        bench_record "git status --porcelain" "$t"
        bench_time t git -C "$bd_path" checkout --quiet --force --detach origin/main ||
            bench_die "git checkout failed"
        bench_record "git checkout --force --detach" "$t"
        bench_time t git -C "$bd_path" reset --quiet --hard origin/main || bench_die "git reset failed"
        bench_record "git reset --hard" "$t"
        bench_time t git -C "$bd_path" clean -fdq || bench_die "git clean failed"
        bench_record "git clean -fd" "$t"
    done
    "$ORANGE" workspace release "$bd_name" >/dev/null
fi

elapsed=$((SECONDS - bench_start))

BENCH_LABEL[acquire]="acquire (orange) vs worktree add"
BENCH_LABEL[release]="release (orange) vs worktree remove"
BENCH_LABEL[pair]="pair: acquire+release vs add+remove"
measures=(acquire release pair)

if ((json)); then
    bench_machine_line "$tmp" >&2
    bench_compare_json orange baseline "${measures[@]}"
else
    printf 'orange workspace pool vs git worktree — %s tracked files, %s iterations (+%s warm-up)\n' \
        "$tracked" "$iters" "$warmup"
    bench_machine_line "$tmp"
    echo
    bench_compare_table orange baseline "${measures[@]}"
    if ((breakdown)); then
        echo
        echo "release, step by step (medians of the commands it runs, in a clean workspace):"
        {
            printf 'step\tmedian ms\tp90 ms\n'
            for k in "orange workspace list (process + state read)" \
                "git fetch --no-tags origin main" "git status --porcelain" \
                "git checkout --force --detach" "git reset --hard" "git clean -fd"; do
                printf '%s\t%s\t%s\n' "$k" "$(bench_ms "$(bench_stat "$k" median)")" \
                    "$(bench_ms "$(bench_stat "$k" p90)")"
            done
        } | bench_print_table
    fi
    echo
    echo "(total run time ${elapsed}s, including build and fixture)"
fi
