#!/usr/bin/env bash
# bench-remote.sh — remote hosts over a loopback sshd (a real OpenSSH server on 127.0.0.1
# with its own host key, port and authorized key, as this user), each figure next to its
# baseline in the same run, medians, ratio = orange / baseline (lower is better). Remote
# commands are measured twice: through the host's long-lived `orange serve` (the default)
# and the way they ran before it, one ssh and one login shell each (`ORANGE_SERVE=0`):
#   create   `orange task create --project P BR S` of a project on the host (its server
#            already running) vs the same create of a local project   target: ≤ 1.2×
#   show     `orange task show ID` of a task on the host vs of a local task
#                                                                   target: ≤ 1.5×
#   status   `orange status --format tmux` with 100 remote tasks (seen through the last
#            monitor fetch) vs with 100 local tasks; and the ssh processes it runs (an
#            `ssh` wrapper first on PATH counts them)       target: ≈ 1×, 0 ssh
#   monitor  one `orange monitor --once` with 3 hosts × 20 live sessions vs one ssh round
#            trip through the shared connection (`ssh … true`); and the ssh processes it
#            runs                                           target: ≤ 2× a round trip
#
# The remote login shell: by default every command sshd starts sources a `.bashrc` that
# sleeps 150 ms (sshd sets SHLVL=1, so bash skips this user's ~/.bashrc, and BASH_ENV, which
# bash reads instead: a shell startup that does work, as pyenv or nvm do).
#
# Everything runs through orange's command line, under one mktemp -d directory removed at
# exit with its sshd and tmux servers. The tasks' agent is `sleep 600` (a harness in
# config.toml): the figures are orange's and ssh's, not an agent's.
#
# Usage: scripts/bench-remote.sh [create] [show] [status] [monitor]   (default: all)
# Environment: ORANGE_BIN (default target/release/orange, built if missing),
#   BENCH_RUNS (default 10), BENCH_KEEP=1 keeps the directory,
#   BENCH_BASHRC_MS (default 150): what the remote login shell costs; 0 (or
#   BENCH_QUIET_SHELL=1): nothing; BENCH_USER_BASHRC=1: this user's own ~/.bashrc instead.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

runs=${BENCH_RUNS:-10}
want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=(create show status monitor)
bashrc_ms=${BENCH_BASHRC_MS:-150}
[[ ${BENCH_QUIET_SHELL:-} == 1 ]] && bashrc_ms=0
sshd_bin=$(command -v sshd || echo /usr/sbin/sshd)
[[ -x $sshd_bin ]] || bench_die "sshd is not installed (apt-get install openssh-server)"
command -v ssh >/dev/null || bench_die "ssh is not installed"
bin=${ORANGE_BIN:-$root/target/release/orange}
if [[ ! -x $bin ]]; then
    (cd "$root" && cargo build --release --quiet) || bench_die "cargo build --release failed"
fi

tmp=$(mktemp -d /tmp/orange-bench-remote.XXXXXX)
sockets=()
sshd_pid=
cleanup() {
    for s in "${sockets[@]}"; do tmux -L "$s" kill-server 2>/dev/null || true; done
    if [[ -n $sshd_pid ]]; then kill "$sshd_pid" 2>/dev/null || true; fi
    [[ ${BENCH_KEEP:-} == 1 ]] || rm -rf "$tmp"
}
trap cleanup EXIT
bench_init_samples "$tmp/samples"
bench_git_env "$tmp"

# --- the "remote host": a private sshd ---------------------------------------------------
mkdir -p "$tmp/sshd" /run/sshd 2>/dev/null || mkdir -p "$tmp/sshd"
ssh-keygen -q -t ed25519 -N '' -f "$tmp/sshd/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$tmp/sshd/id"
cp "$tmp/sshd/id.pub" "$tmp/sshd/authorized_keys"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/sshd/config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $tmp/sshd/host_key
AuthorizedKeysFile $tmp/sshd/authorized_keys
PidFile $tmp/sshd/pid
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
MaxSessions 100
MaxStartups 100
EOF
if [[ ${BENCH_USER_BASHRC:-} == 1 ]]; then
    bench_log "the remote login shell reads this user's ~/.bashrc"
elif [[ $bashrc_ms -gt 0 ]]; then
    # Sourced by bash for every command sshd starts; it unsets itself so that nothing the
    # command runs pays it again (as a real .bashrc is read once, by the login shell).
    printf 'sleep %s\nunset BASH_ENV\n' "$(awk -v m="$bashrc_ms" 'BEGIN{printf "%.3f", m/1000}')" >"$tmp/sshd/bashrc"
    echo "SetEnv SHLVL=1 BASH_ENV=$tmp/sshd/bashrc" >>"$tmp/sshd/config"
    bench_log "the remote login shell sleeps ${bashrc_ms} ms (BASH_ENV), this user's ~/.bashrc skipped"
else
    echo "SetEnv SHLVL=1" >>"$tmp/sshd/config"
    bench_log "sshd sessions get SHLVL=1: bash skips ~/.bashrc for their commands"
fi
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$tmp/sshd/host_key.pub")" >"$tmp/sshd/known_hosts"
"$sshd_bin" -D -e -f "$tmp/sshd/config" 2>"$tmp/sshd/log" &
sshd_pid=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
ssh_opts=(-o "Port=$port" -o "IdentityFile=$tmp/sshd/id" -o IdentitiesOnly=yes -o "UserKnownHostsFile=$tmp/sshd/known_hosts")
host_opts=()
for ((i = 1; i < ${#ssh_opts[@]}; i += 2)); do host_opts+=(--ssh-option "${ssh_opts[i]}"); done

# A data root with the sleeping harness; a repository with a bare origin.
make_home() { # DIR
    mkdir -p "$1"
    printf '[harness.sleeper]\ncommand = "sleep 600"\n' >"$1/config.toml"
}
make_repo() { # DIR
    git init -q --bare -b main "$1-origin.git"
    git init -q -b main "$1"
    echo hi >"$1/README.md"
    git -C "$1" add -A && git -C "$1" commit -qm init
    git -C "$1" remote add origin "$1-origin.git" && git -C "$1" push -q -u origin main
    git -C "$1" remote set-head origin -a >/dev/null
}
# new_socket: a private tmux server; its -L name in $sock (no subshell: the list of
# servers to kill at exit must grow here).
new_socket() {
    sock="bench-remote-$$-${#sockets[@]}"
    sockets+=("$sock")
    tmux -L "$sock" -f /dev/null new-session -d -s keepalive
}
# A host NAME for this machine's orange (LOCAL home) whose orange runs with REMOTE home
# and SOCKET, holding the repository REPO as project PROJECT.
add_host() { # LOCAL NAME REMOTE SOCKET REPO PROJECT
    ORANGE_HOME=$1 "$bin" host add "$2" 127.0.0.1 "${host_opts[@]}" --orange-bin "$bin" \
        --remote-home "$3" --remote-socket "$4" >/dev/null
    ORANGE_HOME=$1 "$bin" project add --host "$2" "$5" --name "$6" --pool-size 40 >/dev/null
}
median_ms() { bench_ms "$(bench_stat "$1" median)"; }
ratio() { awk -v a="$(bench_stat "$1" median)" -v b="$(bench_stat "$2" median)" 'BEGIN{printf "%.2f×", a/b}'; }
rows=()
row() { rows+=("$(printf '%s\t%s\t%s\t%s\t%s' "$@")"); }
# One ssh round trip through a host's shared connection (CONTROL: its control socket).
rtt() { # KEY CONTROL
    local t
    bench_time t ssh "${ssh_opts[@]}" -o ControlMaster=no -o "ControlPath=$2" 127.0.0.1 true
    bench_record "$1" "$t"
}
# Under `ORANGE_SERVE=0`: one ssh and one login shell a command, as before `orange serve`.
old_way=(env ORANGE_SERVE=0)

# --- create ------------------------------------------------------------------------------
if [[ " ${want[*]} " == *" create "* || " ${want[*]} " == *" show "* ]]; then
    bench_log "create and show: $runs local, $runs remote (serve) and $runs remote (one ssh each), alternating"
    L=$tmp/c-local R=$tmp/c-remote
    make_home "$L"; make_home "$R"
    make_repo "$tmp/c-repo-local"; make_repo "$tmp/c-repo-remote"
    new_socket; ls_=$sock
    new_socket; rs=$sock
    ORANGE_HOME=$L ORANGE_TMUX_SOCKET=$ls_ "$bin" project add "$tmp/c-repo-local" --name here --pool-size 40 >/dev/null
    add_host "$L" box "$R" "$rs" "$tmp/c-repo-remote" there
    ORANGE_HOME=$L "$bin" host check box >/dev/null # the shared connection and the server are up
    for i in $(seq "$runs"); do
        bench_time t env ORANGE_HOME="$L" ORANGE_TMUX_SOCKET="$ls_" "$bin" task create --project here "l/$i" s --harness sleeper
        bench_record create.local "$t"
        bench_time t env ORANGE_HOME="$L" "$bin" task create --project there "r/$i" s --harness sleeper
        bench_record create.remote "$t"
        bench_time t "${old_way[@]}" ORANGE_HOME="$L" "$bin" task create --project there "o/$i" s --harness sleeper
        bench_record create.old "$t"
        rtt create.rtt "$L/run/ssh/box"
    done
    row "ssh round trip" "-" "$(median_ms create.rtt) ms" "-" "through the shared connection"
    if [[ " ${want[*]} " == *" create "* ]]; then
        row create "$(median_ms create.local) ms (local)" "$(median_ms create.remote) ms (serve)" \
            "$(ratio create.remote create.local)" "≤ 1.2×"
        row "create, one ssh each" "$(median_ms create.local) ms (local)" "$(median_ms create.old) ms (ORANGE_SERVE=0)" \
            "$(ratio create.old create.local)" "before serve"
    fi
    if [[ " ${want[*]} " == *" show "* ]]; then
        first_id() { python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])'; }
        lid=$(ORANGE_HOME=$L ORANGE_TMUX_SOCKET=$ls_ "$bin" task list --project here --json | first_id)
        rid=$(ORANGE_HOME=$L "$bin" task list --project there --json | first_id)
        [[ -n $lid && -n $rid ]] || bench_die "no task to show"
        for _ in $(seq "$runs"); do
            bench_time t env ORANGE_HOME="$L" ORANGE_TMUX_SOCKET="$ls_" "$bin" task show "$lid"
            bench_record show.local "$t"
            bench_time t env ORANGE_HOME="$L" "$bin" task show "$rid"
            bench_record show.remote "$t"
            bench_time t "${old_way[@]}" ORANGE_HOME="$L" "$bin" task show "$rid"
            bench_record show.old "$t"
        done
        row show "$(median_ms show.local) ms (local)" "$(median_ms show.remote) ms (serve)" \
            "$(ratio show.remote show.local)" "≤ 1.5×"
        row "show, one ssh each" "$(median_ms show.local) ms (local)" "$(median_ms show.old) ms (ORANGE_SERVE=0)" \
            "$(ratio show.old show.local)" "before serve"
    fi
fi

# --- status ------------------------------------------------------------------------------
if [[ " ${want[*]} " == *" status "* ]]; then
    bench_log "status: 100 remote tasks vs 100 local tasks"
    L=$tmp/s-local R=$tmp/s-remote L2=$tmp/s-local2
    make_home "$L"; make_home "$R"; make_home "$L2"
    make_repo "$tmp/s-repo-remote"; make_repo "$tmp/s-repo-local"
    new_socket; ls_=$sock
    new_socket; rs=$sock
    new_socket; ls2=$sock
    add_host "$L" box "$R" "$rs" "$tmp/s-repo-remote" there
    ORANGE_HOME=$L2 ORANGE_TMUX_SOCKET=$ls2 "$bin" project add "$tmp/s-repo-local" --name here >/dev/null
    for i in $(seq 100); do
        ORANGE_HOME=$R ORANGE_TMUX_SOCKET=$rs "$bin" task create --project there "r/$i" s --harness sleeper --no-spawn >/dev/null
        ORANGE_HOME=$L2 ORANGE_TMUX_SOCKET=$ls2 "$bin" task create --project here "l/$i" s --harness sleeper --no-spawn >/dev/null
    done
    ORANGE_HOME=$L ORANGE_TMUX_SOCKET=$ls_ "$bin" monitor --once >/dev/null # fetch the host
    # An ssh that counts its calls, first on PATH.
    mkdir -p "$tmp/count"
    printf '#!/bin/sh\necho "$*" >> %s/ssh-calls\nexec %s "$@"\n' "$tmp" "$(command -v ssh)" >"$tmp/count/ssh"
    chmod +x "$tmp/count/ssh"
    : >"$tmp/ssh-calls"
    for _ in $(seq $((runs * 5))); do
        bench_time t env PATH="$tmp/count:$PATH" ORANGE_HOME="$L" ORANGE_TMUX_SOCKET="$ls_" "$bin" status --format tmux
        bench_record status.remote "$t"
        bench_time t env ORANGE_HOME="$L2" ORANGE_TMUX_SOCKET="$ls2" "$bin" status --format tmux
        bench_record status.local "$t"
    done
    calls=$(wc -l <"$tmp/ssh-calls")
    row status "$(median_ms status.local) ms (100 local)" "$(median_ms status.remote) ms (100 remote)" \
        "$(ratio status.remote status.local)" "≈ 1×; ssh calls: $calls"
fi

# --- monitor -----------------------------------------------------------------------------
if [[ " ${want[*]} " == *" monitor "* ]]; then
    bench_log "monitor: 3 hosts × 20 live sessions"
    L=$tmp/m-local
    make_home "$L"
    new_socket; ls_=$sock
    for h in a b c; do
        R=$tmp/m-remote-$h
        make_home "$R"; make_repo "$tmp/m-repo-$h"
        new_socket; rs=$sock
        add_host "$L" "$h" "$R" "$rs" "$tmp/m-repo-$h" "p$h"
        for i in $(seq 20); do
            ORANGE_HOME=$R ORANGE_TMUX_SOCKET=$rs "$bin" task create --project "p$h" "t/$i" s --harness sleeper >/dev/null
        done
        ORANGE_HOME=$L "$bin" host check "$h" >/dev/null
    done
    mkdir -p "$tmp/count"
    printf '#!/bin/sh\necho "$*" >> %s/ssh-calls\nexec %s "$@"\n' "$tmp" "$(command -v ssh)" >"$tmp/count/ssh"
    chmod +x "$tmp/count/ssh"
    # A first pass records what each host's sessions are: not what is measured.
    ORANGE_HOME=$L ORANGE_TMUX_SOCKET=$ls_ "$bin" monitor --once >/dev/null
    : >"$tmp/ssh-calls"
    : >"$tmp/ssh-calls-old"
    for _ in $(seq "$runs"); do
        bench_time t env PATH="$tmp/count:$PATH" ORANGE_HOME="$L" ORANGE_TMUX_SOCKET="$ls_" "$bin" monitor --once
        bench_record monitor.pass "$t"
        rtt monitor.rtt "$L/run/ssh/a"
        n=$(wc -l <"$tmp/ssh-calls")
        bench_time t env PATH="$tmp/count:$PATH" "${old_way[@]}" ORANGE_HOME="$L" ORANGE_TMUX_SOCKET="$ls_" "$bin" monitor --once
        bench_record monitor.old "$t"
        echo $(($(wc -l <"$tmp/ssh-calls") - n)) >>"$tmp/ssh-calls-old"
    done
    per_old=$(awk -v r="$runs" '{n += $1} END {printf "%.1f", n/r}' "$tmp/ssh-calls-old")
    per_pass=$(awk -v n="$(wc -l <"$tmp/ssh-calls")" -v o="$per_old" -v r="$runs" 'BEGIN{printf "%.1f", n/r - o}')
    row monitor "$(median_ms monitor.rtt) ms (one ssh round trip)" "$(median_ms monitor.pass) ms (serve)" \
        "$(ratio monitor.pass monitor.rtt)" "≤ 2×; ssh processes per pass: $per_pass"
    row "monitor, one ssh each" "$(median_ms monitor.rtt) ms (one ssh round trip)" "$(median_ms monitor.old) ms (ORANGE_SERVE=0)" \
        "$(ratio monitor.old monitor.rtt)" "before serve; ssh processes per pass: $per_old"
fi

bench_machine_line "$@" >&2 || true
{
    printf 'figure\tbaseline\torange\tratio\ttarget / count\n'
    printf '%s\n' "${rows[@]}"
} | bench_print_table
