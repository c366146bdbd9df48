#!/usr/bin/env bash
# bench-sidebar.sh — the cost of one sidebar frame next to the git commands it replaces.
#
# A repository of BENCH_FILES (default 5000) files in ~50 directories; one orange task
# (running an idle stand-in agent on a private tmux server) whose workspace changed
# BENCH_CHANGES (default 1000) files against the default branch:
#   half of them modified in two commits, a tenth each added, deleted and renamed in a third
#   commit, a tenth modified and staged, and the rest split between unstaged
#   modifications and untracked files.
# Side by side, over BENCH_ITERS iterations (default 20) after 3 warm-up ones, alternating
# which goes first:
#   orange    `orange sidebar --once --task ID --width 40`: one whole frame (task files,
#             one tmux call, the diff with renames, untracked files and line counts),
#             twice: "warm", as every refresh after the first runs (line counts of blobs
#             already counted come from $ORANGE_HOME/run/sidebar/), and "cold", with that
#             cache removed before the frame (the first frame of a task)
#   baseline  `git diff --name-status <merge-base>` then `git status --porcelain`, run
#             together in the workspace (what the frame's Files section needs, from git)
# Prints the medians, p90s and the ratio baseline/orange (the goal: a frame no
# slower than the two git commands, a ratio of at least 1.0x).
# With BENCH_BASE_BIN, that orange binary's frame (an older build) is timed too, in the
# same iterations on the same task, and compared with this one's (ratio base/orange).
# With BENCH_SETUP_FILES=N, the project's setup command leaves N untracked files in
# setup-out/ (not ignored): this build leaves them out of the frame by the slot's setup
# record, an older one lists them (and reads them for their line counts).
#
# Usage: scripts/bench-sidebar.sh [--json] [--breakdown]
#   --json       one JSON object {measure: {orange_ms, baseline_ms, ratio, …}} on stdout
#                instead of the table (the machine line then goes to stderr)
#   --breakdown  also time the two git commands on their own, and `git diff --shortstat`
#                (what git itself takes to count the changed lines)
# Environment:
#   ORANGE_BIN    use this binary instead of building with `cargo build --release`
#   BENCH_ITERS   measured iterations (default 20)
#   BENCH_WARMUP  warm-up iterations (default 3)
#   BENCH_FILES   files in the fixture repository (default 5000)
#   BENCH_DIRS    directories they are spread over (default 50)
#   BENCH_CHANGES changed files of the task (default 1000, at most BENCH_FILES/2)
#   BENCH_KEEP=1  keep the temporary directory (its path is printed)
#   BENCH_BASE_BIN     another orange binary whose frame is timed beside this one's
#   BENCH_SETUP_FILES  untracked files the project's setup command leaves (default 0)
# Everything (repositories, workspace, ORANGE_HOME, the tmux socket) lives in one mktemp -d
# directory, removed at exit; the private tmux server is killed at exit.
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
nchanges=${BENCH_CHANGES:-1000}
nsetup=${BENCH_SETUP_FILES:-0}
base_bin=${BENCH_BASE_BIN:-}
[[ -z $base_bin || -x $base_bin ]] || bench_die "BENCH_BASE_BIN is not an executable: $base_bin"
for v in BENCH_ITERS=$iters BENCH_WARMUP=$warmup BENCH_FILES=$nfiles BENCH_DIRS=$ndirs \
    BENCH_CHANGES=$nchanges BENCH_SETUP_FILES=$nsetup; do
    [[ ${v#*=} =~ ^[0-9]+$ ]] || bench_die "${v%%=*} must be a non-negative integer (got '${v#*=}')"
done
((iters > 0)) || bench_die "BENCH_ITERS must be at least 1"
((ndirs > 0)) || bench_die "BENCH_DIRS must be at least 1"
((nchanges >= 10)) || bench_die "BENCH_CHANGES must be at least 10"
((nchanges * 2 <= nfiles)) || bench_die "BENCH_CHANGES must be at most BENCH_FILES/2"
command -v tmux >/dev/null || bench_die "tmux is not installed (the task's agent runs in it)"

bench_start=${SECONDS}

bench_build_orange "$root"

bench_workspace bench-sidebar private
# orange must not find the user's tmux server or the pane the script runs in.
unset ORANGE_TASK_ID COLUMNS

bench_log "creating a repository of $nfiles files in $ndirs directories"
repo=$(bench_make_repo "$tmp" "$nfiles" "$ndirs")

bench_log "registering it and starting a task with an idle stand-in agent"
mkdir -p "$ORANGE_HOME"
# The agent only has to stay alive: the prompt orange appends becomes a comment.
printf '[harness.idle]\ncommand = "sleep 86400 #"\n' >"$ORANGE_HOME/config.toml"
cd "$repo"
setup=()
if ((nsetup > 0)); then
    # Untracked output of the setup (not ignored), one line each.
    setup=(--setup-cmd "mkdir -p setup-out && for i in \$(seq $nsetup); do echo \"generated \$i\" > setup-out/f\$i.txt; done")
fi
"$ORANGE" project add "$repo" --name bench --pool-size 1 "${setup[@]}" >&2
created=$("$ORANGE" task create bench/sidebar "Change many files" --harness idle)
# "created task ID (bench/…) [working] [idle] in bench--1 → tmux session …"
task_id=$(awk '{ print $3; exit }' <<<"$created")
ws_name=$(sed -n 's/.* in \([^ ]*\) → tmux session.*/\1/p' <<<"$created")
[[ -n "$task_id" && -n "$ws_name" ]] || bench_die "unexpected task create output: $created"
ws="$ORANGE_HOME/workspaces/$ws_name"
[[ -d "$ws" ]] || bench_die "workspace $ws does not exist"

bench_log "changing $nchanges files in the task's workspace"
cd "$ws"
mapfile -t files < <(git ls-files 'pkg*')
tenth=$((nchanges / 10))
half=$((nchanges / 2))
rest=$((nchanges - half - 4 * tenth))
unstaged=$((rest / 2))
untracked=$((rest - unstaged))
i=0
# Half: modified, in two commits.
for ((n = 0; n < half; n++, i++)); do
    printf 'changed by the task, line %d\n' "$n" >>"${files[i]}"
    ((n != half / 2)) || git commit --quiet -am "modify (1)"
done
git commit --quiet -am "modify (2)"
# A tenth each: added, deleted, renamed (one commit).
for ((n = 0; n < tenth; n++)); do
    printf 'new file %d\nsecond line\n' "$n" >"pkg00/mod00/added$n.rs"
done
for ((n = 0; n < tenth; n++, i++)); do git rm --quiet "${files[i]}"; done
for ((n = 0; n < tenth; n++, i++)); do git mv "${files[i]}" "${files[i]%.rs}_moved.rs"; done
git add -A -- . ':(exclude)setup-out' # never the setup's output
git commit --quiet -m "add, delete, rename"
# A tenth: modified and staged.
for ((n = 0; n < tenth; n++, i++)); do
    printf 'staged change %d\n' "$n" >>"${files[i]}"
    git add "${files[i]}"
done
# The rest: unstaged modifications and untracked files.
for ((n = 0; n < unstaged; n++, i++)); do printf 'unstaged change %d\n' "$n" >>"${files[i]}"; done
mkdir -p scratch/notes
for ((n = 0; n < untracked; n++)); do printf 'untracked %d\n' "$n" >"scratch/notes/u$n.txt"; done

merge_base=$(git merge-base HEAD origin/main)
tracked_changes=$(git diff --name-status "$merge_base" | wc -l)
untracked_now=$(git status --porcelain --untracked-files=all | grep -v '^?? setup-out/' | grep -c '^??' || true)
((tracked_changes + untracked_now == nchanges)) ||
    bench_die "fixture has $tracked_changes tracked + $untracked_now untracked changes, not $nchanges"
cd "$repo"

sidebar_frame() {
    "$ORANGE" sidebar --once --task "$task_id" --width 40
}

base_frame() {
    "$base_bin" sidebar --once --task "$task_id" --width 40
}

# What the frame's Files section needs, from git: both commands, one after the other.
git_pair() {
    git -C "$ws" diff --name-status "$merge_base" &&
        git -C "$ws" status --porcelain
}

orange_iteration() {
    local mode=$1 i=$2 t
    rm -rf -- "$ORANGE_HOME/run/sidebar"
    bench_time t sidebar_frame || bench_die "orange sidebar --once failed"
    [[ $mode == record ]] && bench_record cold.orange "$t"
    bench_time t sidebar_frame || bench_die "orange sidebar --once failed"
    if ((i == 1)); then
        grep -q "^── Files ($nchanges) ─" "$BENCH_STDOUT" ||
            bench_die "the frame does not show $nchanges files: $(head -n 12 "$BENCH_STDOUT")"
        grep -q '^Status: working   ● live$' "$BENCH_STDOUT" ||
            bench_die "the frame does not show a live agent: $(head -n 3 "$BENCH_STDOUT")"
    fi
    [[ $mode == record ]] && bench_record warm.orange "$t"
    [[ -n $base_bin ]] || return 0
    rm -rf -- "$ORANGE_HOME/run/sidebar"
    bench_time t base_frame || bench_die "BENCH_BASE_BIN sidebar --once failed"
    [[ $mode == record ]] && bench_record cold.base "$t"
    bench_time t base_frame || bench_die "BENCH_BASE_BIN sidebar --once failed"
    [[ $mode == record ]] && bench_record warm.base "$t"
    return 0
}

baseline_iteration() {
    local mode=$1 t
    bench_time t git_pair || bench_die "git diff/status failed"
    if [[ $mode == record ]]; then
        bench_record warm.baseline "$t"
        bench_record cold.baseline "$t"
    fi
    return 0
}

run_iterations() {
    local mode=$1 n=$2 i
    for ((i = 1; i <= n; i++)); do
        if ((i % 2)); then
            orange_iteration "$mode" "$i"
            baseline_iteration "$mode"
        else
            baseline_iteration "$mode"
            orange_iteration "$mode" "$i"
        fi
    done
}

bench_log "warm-up: $warmup iteration(s)"
run_iterations warmup "$warmup"
bench_log "measuring: $iters iteration(s)"
run_iterations record "$iters"

if ((breakdown)); then
    bench_log "breakdown: $iters iteration(s)"
    for ((i = 1; i <= iters; i++)); do
        bench_time t git -C "$ws" diff --name-status "$merge_base" || bench_die "git diff failed"
        bench_record "git diff --name-status <merge-base>" "$t"
        bench_time t git -C "$ws" status --porcelain || bench_die "git status failed"
        bench_record "git status --porcelain" "$t"
        bench_time t git -C "$ws" diff --shortstat "$merge_base" || bench_die "git diff --shortstat failed"
        bench_record "git diff --shortstat <merge-base> (line counts)" "$t"
        bench_time t "$ORANGE" sidebar --once --task "$task_id" --width 40 --json ||
            bench_die "orange sidebar --once --json failed"
        bench_record "orange sidebar --once --json" "$t"
    done
fi

elapsed=$((SECONDS - bench_start))

BENCH_LABEL[warm]="sidebar frame (warm) vs git diff --name-status + git status"
BENCH_LABEL[cold]="sidebar frame (cold) vs git diff --name-status + git status"
measures=(warm cold)

if ((json)); then
    bench_machine_line "$tmp" >&2
    bench_compare_json orange baseline "${measures[@]}"
    [[ -z $base_bin ]] || bench_compare_json orange base "${measures[@]}"
else
    printf 'orange sidebar frame vs git — %s files, %s changed (%s untracked), %s setup files, %s iterations (+%s warm-up)\n' \
        "$nfiles" "$nchanges" "$untracked" "$nsetup" "$iters" "$warmup"
    bench_machine_line "$tmp"
    echo
    bench_compare_table orange baseline "${measures[@]}"
    if [[ -n $base_bin ]]; then
        echo
        echo "this build (orange) vs BENCH_BASE_BIN (base: $base_bin)"
        BENCH_LABEL[warm]="sidebar frame (warm)"
        BENCH_LABEL[cold]="sidebar frame (cold)"
        bench_compare_table orange base "${measures[@]}"
    fi
    if ((breakdown)); then
        echo
        {
            printf 'command\tmedian ms\tp90 ms\n'
            for k in "git diff --name-status <merge-base>" "git status --porcelain" \
                "git diff --shortstat <merge-base> (line counts)" "orange sidebar --once --json"; do
                printf '%s\t%s\t%s\n' "$k" "$(bench_ms "$(bench_stat "$k" median)")" \
                    "$(bench_ms "$(bench_stat "$k" p90)")"
            done
        } | bench_print_table
    fi
    echo
    echo "(total run time ${elapsed}s, including build and fixture)"
fi
