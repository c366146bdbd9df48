# shellcheck shell=bash
# lib-bench.sh — helpers shared by orange's benchmark scripts (bench-*.sh).
#
# Source it from a bash script that runs with `set -euo pipefail`:
#
#     . "$(dirname "${BASH_SOURCE[0]}")/lib-bench.sh"
#
# What it provides (every function is prefixed `bench_`):
#
#   timing     bench_now VAR                 current time in ns into VAR (no fork)
#              bench_time VAR CMD [ARG...]   run CMD, its elapsed ns into VAR; stdout and
#                                            stderr go to $BENCH_STDOUT / $BENCH_STDERR
#   samples    bench_init_samples DIR        where samples are kept (one file per key)
#              bench_record KEY NS           add one sample (ns) under KEY
#              bench_stat KEY STAT           median|p90|p<N>|min|max|mean|n of KEY, in ns
#              bench_stat_stdin STAT         the same for numbers read from stdin
#   format     bench_ms NS                   "12.34" (ms, two decimals)
#              bench_ratio BASE_NS OURS_NS   "41.3x faster" / "1.8x slower"
#              bench_print_table             aligned table from TSV on stdin (first row:
#                                            header)
#              bench_json_escape STR
#   reports    bench_compare_table  OURS BASE MEASURE...
#              bench_compare_json   OURS BASE MEASURE...
#                                            compare samples "<measure>.<OURS>" with
#                                            "<measure>.<BASE>"; labels for the table
#                                            come from BENCH_LABEL[<measure>] if set
#   fixtures   bench_git_env DIR             hermetic git: identity from env vars, no
#                                            user/system config (DIR gets a gitconfig)
#              bench_make_repo DIR NFILES NDIRS
#                                            DIR/origin.git (bare, branch main) and
#                                            DIR/repo (a clone with origin/HEAD set)
#              bench_build_orange ROOT       sets ORANGE (the binary): $ORANGE_BIN, or
#                                            `cargo build --release` in ROOT
#              bench_machine_line            one line: nproc, CPU, git, kernel, fs
#   misc       bench_log MSG...              progress on stderr
#              bench_die MSG...
#
# Times are integer nanoseconds everywhere; only the formatting helpers turn them into
# milliseconds.

if [[ -n "${_BENCH_LIB_LOADED:-}" ]]; then
    return 0
fi
_BENCH_LIB_LOADED=1

BENCH_STDOUT="${BENCH_STDOUT:-/dev/null}"
BENCH_STDERR="${BENCH_STDERR:-/dev/null}"
BENCH_SAMPLES_DIR="${BENCH_SAMPLES_DIR:-}"
declare -gA BENCH_LABEL=()

bench_log() {
    printf '[bench] %s\n' "$*" >&2
}

bench_die() {
    printf '[bench] error: %s\n' "$*" >&2
    exit 1
}

# ---------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------

# bench_now VAR: nanoseconds since the epoch into VAR.
# Bash 5's $EPOCHREALTIME is read without forking (microsecond resolution, padded to ns);
# `date +%s%N` costs a fork+exec (about 1 ms), which would swamp fast commands, so it is
# only the fallback for older shells.
if [[ -n "${EPOCHREALTIME:-}" ]]; then
    bench_now() {
        local t=${EPOCHREALTIME}
        t=${t//[!0-9]/} # drop the decimal separator, whatever the locale's is
        printf -v "$1" '%s000' "$t"
    }
else
    bench_now() {
        local t
        t=$(date +%s%N)
        printf -v "$1" '%s' "$t"
    }
fi

# bench_wait_file FILE...: spin until one of the FILEs exists (no fork per check), at most
# 30 s (an agent marks that it started).
bench_wait_file() {
    local f t0=$SECONDS
    while :; do
        for f in "$@"; do [[ -e "$f" ]] && return 0; done
        ((SECONDS - t0 < 30)) || bench_die "the agent never started ($*)"
    done
}

# bench_time VAR CMD [ARG...]: run CMD (stdout to $BENCH_STDOUT, stderr to $BENCH_STDERR),
# store its wall time in ns in VAR. Returns CMD's exit status; on failure CMD's stderr is
# copied to ours, so `bench_time t cmd || bench_die ...` explains itself.
bench_time() {
    local __var=$1 __t0 __t1 __rc=0
    shift
    bench_now __t0
    "$@" >"$BENCH_STDOUT" 2>"$BENCH_STDERR" || __rc=$?
    bench_now __t1
    printf -v "$__var" '%s' "$((__t1 - __t0))"
    if ((__rc != 0)); then
        printf '[bench] command failed (exit %d): %s\n' "$__rc" "$*" >&2
        if [[ -f "$BENCH_STDERR" ]]; then
            sed 's/^/[bench]   /' "$BENCH_STDERR" >&2 || true
        fi
    fi
    return "$__rc"
}

# ---------------------------------------------------------------------------------------
# Samples and statistics
# ---------------------------------------------------------------------------------------

bench_init_samples() {
    BENCH_SAMPLES_DIR=$1
    mkdir -p "$BENCH_SAMPLES_DIR"
}

_bench_samples_file() {
    [[ -n "$BENCH_SAMPLES_DIR" ]] || bench_die "bench_init_samples was not called"
    printf '%s/%s' "$BENCH_SAMPLES_DIR" "${1//\//_}"
}

bench_record() {
    printf '%s\n' "$2" >>"$(_bench_samples_file "$1")"
}

# bench_stat_stdin STAT: numbers (one a line) on stdin → one integer on stdout.
#   median   middle value (mean of the two middle ones for an even count)
#   p<N>     nearest-rank percentile, e.g. p90, p99
#   min max mean n
# Prints nothing (and returns 1) when there are no numbers.
bench_stat_stdin() {
    local stat=$1
    sort -n | awk -v stat="$stat" '
        NF { a[++n] = $1; sum += $1 }
        END {
            if (n == 0) exit 1
            if (stat == "median") {
                v = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
            } else if (stat ~ /^p[0-9]+(\.[0-9]+)?$/) {
                p = substr(stat, 2) / 100
                r = p * n; i = int(r); if (i < r) i++   # ceil
                if (i < 1) i = 1; if (i > n) i = n
                v = a[i]
            } else if (stat == "min") { v = a[1]
            } else if (stat == "max") { v = a[n]
            } else if (stat == "mean") { v = sum / n
            } else if (stat == "n") { v = n
            } else { print "unknown statistic " stat > "/dev/stderr"; exit 2 }
            printf "%.0f\n", v
        }'
}

# bench_stat KEY STAT: a statistic of the samples recorded under KEY.
bench_stat() {
    local f
    f=$(_bench_samples_file "$1")
    [[ -s "$f" ]] || return 1
    bench_stat_stdin "$2" <"$f"
}

# ---------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------

bench_ms() {
    awk -v ns="$1" 'BEGIN { printf "%.2f\n", ns / 1e6 }'
}

# bench_ratio BASE_NS OURS_NS: how many times faster we are than the baseline.
bench_ratio() {
    awk -v b="$1" -v o="$2" 'BEGIN {
        if (o <= 0 || b <= 0) { print "n/a"; exit }
        r = b / o
        if (r >= 1) printf "%.1fx faster\n", r
        else printf "%.1fx slower\n", 1 / r
    }'
}

# The same ratio as a number (baseline / ours), for JSON.
_bench_ratio_num() {
    awk -v b="$1" -v o="$2" 'BEGIN { if (o <= 0) print "null"; else printf "%.3f\n", b / o }'
}

# bench_print_table: TSV on stdin (first row the header) → aligned columns, with a rule
# under the header. Columns after the first are right-aligned (they hold numbers).
bench_print_table() {
    awk -F '\t' '
        { rows[NR] = $0; if (NF > nf) nf = NF
          for (i = 1; i <= NF; i++) if (length($i) > w[i]) w[i] = length($i) }
        END {
            for (r = 1; r <= NR; r++) {
                split(rows[r], c, "\t"); line = ""
                for (i = 1; i <= nf; i++) {
                    fmt = (i == 1) ? "%-" w[i] "s" : "%" w[i] "s"
                    line = line (i > 1 ? "   " : "") sprintf(fmt, c[i])
                }
                print line
                if (r == 1) {
                    rule = ""
                    for (i = 1; i <= nf; i++) {
                        s = sprintf("%" w[i] "s", ""); gsub(/ /, "-", s)
                        rule = rule (i > 1 ? "   " : "") s
                    }
                    print rule
                }
            }
        }'
}

bench_json_escape() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\t'/\\t}
    s=${s//$'\r'/\\r}
    printf '%s' "$s"
}

# ---------------------------------------------------------------------------------------
# Reports: OURS vs BASE per measure, from samples "<measure>.<side>"
# ---------------------------------------------------------------------------------------

bench_compare_table() {
    local ours=$1 base=$2 m om op bm bp n
    shift 2
    {
        printf 'measure\t%s median ms\t%s p90 ms\t%s median ms\t%s p90 ms\tratio (%s/%s)\tn\n' \
            "$ours" "$ours" "$base" "$base" "$base" "$ours"
        for m in "$@"; do
            om=$(bench_stat "$m.$ours" median) || bench_die "no samples for $m.$ours"
            op=$(bench_stat "$m.$ours" p90)
            bm=$(bench_stat "$m.$base" median) || bench_die "no samples for $m.$base"
            bp=$(bench_stat "$m.$base" p90)
            n=$(bench_stat "$m.$ours" n)
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${BENCH_LABEL[$m]:-$m}" \
                "$(bench_ms "$om")" "$(bench_ms "$op")" \
                "$(bench_ms "$bm")" "$(bench_ms "$bp")" \
                "$(bench_ratio "$bm" "$om")" "$n"
        done
    } | bench_print_table
}

# One JSON object: {"<measure>": {"<ours>_ms":…, "<base>_ms":…, "ratio":…, …}, …}
# (medians in ms; ratio = base/ours; p90s and the sample count alongside).
bench_compare_json() {
    local ours=$1 base=$2 m om op bm bp n sep=""
    shift 2
    printf '{'
    for m in "$@"; do
        om=$(bench_stat "$m.$ours" median) || bench_die "no samples for $m.$ours"
        op=$(bench_stat "$m.$ours" p90)
        bm=$(bench_stat "$m.$base" median) || bench_die "no samples for $m.$base"
        bp=$(bench_stat "$m.$base" p90)
        n=$(bench_stat "$m.$ours" n)
        printf '%s"%s":{"%s_ms":%s,"%s_ms":%s,"ratio":%s,"%s_p90_ms":%s,"%s_p90_ms":%s,"n":%s}' \
            "$sep" "$(bench_json_escape "$m")" \
            "$ours" "$(bench_ms "$om")" "$base" "$(bench_ms "$bm")" \
            "$(_bench_ratio_num "$bm" "$om")" \
            "$ours" "$(bench_ms "$op")" "$base" "$(bench_ms "$bp")" "$n"
        sep=","
    done
    printf '}\n'
}

# ---------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------

# bench_git_env DIR: make git ignore the user's and the system's configuration (hooks,
# fsmonitor, signing… would skew or break the run) and give it an identity through
# environment variables, so the fixtures work on a fresh machine.
bench_git_env() {
    local dir=$1
    mkdir -p "$dir"
    : >"$dir/gitconfig"
    export GIT_CONFIG_NOSYSTEM=1
    export GIT_CONFIG_GLOBAL="$dir/gitconfig"
    export GIT_AUTHOR_NAME="orange bench" GIT_AUTHOR_EMAIL="bench@orange.invalid"
    export GIT_COMMITTER_NAME="orange bench" GIT_COMMITTER_EMAIL="bench@orange.invalid"
    export GIT_TERMINAL_PROMPT=0
    unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_COMMON_DIR
}

# bench_make_repo DIR NFILES NDIRS: a bare DIR/origin.git (default branch main) and a clone
# DIR/repo with NFILES small files spread over NDIRS directories (two levels deep) in one
# commit, pushed, and origin/HEAD set. Prints the clone's path.
bench_make_repo() {
    local dir=$1 nfiles=$2 ndirs=$3 i d sub
    local origin="$dir/origin.git" repo="$dir/repo"
    git init --quiet --bare --initial-branch=main "$origin"
    git clone --quiet "$origin" "$repo" 2>/dev/null
    git -C "$repo" checkout --quiet -B main
    for ((d = 0; d < ndirs; d++)); do
        printf -v sub 'pkg%02d/mod%02d' "$((d % 10))" "$d"
        mkdir -p "$repo/$sub"
    done
    for ((i = 0; i < nfiles; i++)); do
        d=$((i % ndirs))
        printf -v sub 'pkg%02d/mod%02d' "$((d % 10))" "$d"
        printf '// file %d of the benchmark repository\nconst ID: usize = %d;\nfn f%d() -> usize { ID * 2 }\n' \
            "$i" "$i" "$i" >"$repo/$sub/file$i.rs"
    done
    printf '# benchmark repository\n%d files in %d directories\n' "$nfiles" "$ndirs" >"$repo/README.md"
    git -C "$repo" add -A
    git -C "$repo" commit --quiet -m "benchmark fixture: $nfiles files"
    git -C "$repo" push --quiet origin main 2>/dev/null
    git -C "$repo" remote set-head origin -a >/dev/null
    git -C "$repo" rev-parse --verify --quiet origin/HEAD >/dev/null ||
        bench_die "origin/HEAD is not set in $repo"
    printf '%s\n' "$repo"
}

# bench_build_orange ROOT: ORANGE := $ORANGE_BIN if set, else build ROOT in release mode.
bench_build_orange() {
    local root=$1
    if [[ -n "${ORANGE_BIN:-}" ]]; then
        [[ -x "$ORANGE_BIN" ]] || bench_die "ORANGE_BIN=$ORANGE_BIN is not an executable"
        ORANGE=$ORANGE_BIN
    else
        command -v cargo >/dev/null || bench_die "cargo not found (or set ORANGE_BIN)"
        bench_log "cargo build --release (in $root)"
        (cd "$root" && cargo build --release --quiet) >&2 || bench_die "cargo build --release failed"
        ORANGE="$root/target/release/orange"
        [[ -x "$ORANGE" ]] || bench_die "$ORANGE was not built"
    fi
    # Absolute, so later `cd`s do not break it.
    case $ORANGE in
    /*) ;;
    *) ORANGE="$PWD/$ORANGE" ;;
    esac
    export ORANGE
}

# bench_machine_line [DIR]: one line describing where the numbers come from. With DIR,
# also the filesystem type it lives on (tmpfs and ext4 differ a lot for worktrees).
bench_machine_line() {
    local cpu kernel gitv fs=""
    cpu=$(awk -F ': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
    [[ -n "$cpu" ]] || cpu=$(uname -m)
    kernel=$(uname -r)
    gitv=$(git --version | awk '{ print $3 }')
    if [[ $# -gt 0 ]]; then
        # findmnt tells ext4 from ext2/ext3 (stat -f cannot); stat -f is the fallback.
        fs=$(findmnt -n -o FSTYPE -T "$1" 2>/dev/null | head -n 1 || true)
        [[ -n "$fs" ]] || fs=$(stat -f -c %T "$1" 2>/dev/null || echo unknown)
        fs=" fs=$fs"
    fi
    printf 'machine: nproc=%s cpu="%s" git=%s kernel=%s%s\n' \
        "$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)" "$cpu" "$gitv" "$kernel" "$fs"
}

# ---------------------------------------------------------------------------------------
# A run's private directory
# ---------------------------------------------------------------------------------------

# bench_workspace NAME [TMUX_SOCKET]: tmp := a fresh temp dir, removed at exit with the
# tmux server on TMUX_SOCKET (a -L name, or `private` for a -S socket inside the dir;
# BENCH_KEEP=1 keeps the dir); git ignores the user's config, ORANGE_HOME (and
# ORANGE_TMUX_SOCKET) point inside it, samples and command output too.
bench_workspace() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/orange-$1.XXXXXX")
    BENCH_SOCK=${2:-}
    [[ $BENCH_SOCK == private ]] && BENCH_SOCK="$tmp/tmux.sock"
    trap _bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    bench_git_env "$tmp/git"
    export ORANGE_HOME="$tmp/orange-home"
    mkdir -p "$ORANGE_HOME"
    if [[ -n $BENCH_SOCK ]]; then export ORANGE_TMUX_SOCKET=$BENCH_SOCK; fi
    unset TMUX TMUX_PANE
    BENCH_STDOUT="$tmp/cmd.out"
    BENCH_STDERR="$tmp/cmd.err"
    bench_init_samples "$tmp/samples"
}

_bench_cleanup() {
    local rc=$?
    case ${BENCH_SOCK:-} in
    "") ;;
    /*) tmux -S "$BENCH_SOCK" kill-server 2>/dev/null || true; rm -f -- "$BENCH_SOCK" ;;
    *) tmux -L "$BENCH_SOCK" kill-server 2>/dev/null || true ;;
    esac
    cd / || true
    if [[ "${BENCH_KEEP:-0}${SOAK_KEEP:-0}" != 00 ]]; then
        bench_log "kept $tmp"
    elif [[ -n "${tmp:-}" && -d "$tmp" ]]; then
        rm -rf -- "$tmp"
    fi
    exit "$rc"
}

# bench_project NAME POOL FILES DIRS: the task benchmarks' set-up: a run's directory and
# tmux server (bench_workspace NAME, socket orange-NAME-PID, kept alive by a session of its
# own), repo := a repository of FILES files in DIRS directories, registered as project
# `bench` with a warm pool of POOL workspaces; leaves the shell in it. The caller writes
# its agent into $ORANGE_HOME/config.toml.
bench_project() {
    local name=$1 pool=$2 files=$3 dirs=$4
    bench_workspace "$name" "orange-$name-$$"
    bench_log "creating a repository of $files files"
    repo=$(bench_make_repo "$tmp" "$files" "$dirs")
    tmux -L "$BENCH_SOCK" -f /dev/null new-session -d -s keepalive
    cd "$repo" || bench_die "cannot enter $repo"
    "$ORANGE" project add "$repo" --name bench --pool-size "$pool" >&2
    "$ORANGE" workspace init >&2
}

# ---------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------

# bench_args "$@": json := 1 with --json, breakdown := 1 with --breakdown (for scripts that
# have it); --help prints the script's header comment (up to `set -euo`).
# shellcheck disable=SC2034 # json and breakdown are the caller's
bench_args() {
    json=0
    breakdown=0
    local arg
    for arg in "$@"; do
        case $arg in
        --json) json=1 ;;
        --breakdown) breakdown=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) bench_die "unknown argument: $arg (try --help)" ;;
        esac
    done
}
