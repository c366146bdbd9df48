#!/usr/bin/env bash
# bench-remote.sh — issue 13's figures: remote hosts over a loopback sshd (a real OpenSSH
# server on 127.0.0.1 with its own host key, port and authorized key, as this user), each
# figure next to its baseline, medians, ratio = orange / baseline (lower is better):
#   create   `orange task create --project P BR S` of a project on the host (the shared
#            connection already open) vs the same create of a local project
#                                                          target: ≤ 2×
#   status   `orange status --format tmux` with 100 remote tasks (seen through the last
#            monitor fetch) vs with 100 local tasks; and the ssh processes it runs (an
#            `ssh` wrapper first on PATH counts them)       target: ≈ 1×, 0 ssh
#   monitor  one `orange monitor --once` with 3 hosts × 20 live sessions vs one ssh round
#            trip through the shared connection (`ssh … true`); and the ssh processes it
#            runs                                           target: 1 ssh call per host
#
# Everything runs through orange's command line, under one mktemp -d directory removed at
# exit with its sshd and tmux servers. The tasks' agent is `sleep 600` (a harness in
# config.toml): the figures are orange's and ssh's, not an agent's.
#
# Usage: scripts/bench-remote.sh [create] [status] [monitor]   (default: all)
# Environment: ORANGE_BIN (default target/release/orange, built if missing),
#   BENCH_RUNS (default 10), BENCH_KEEP=1 keeps the directory,
#   BENCH_QUIET_SHELL=1: the sshd sets SHLVL=1 for its sessions, so that bash does not
#   read ~/.bashrc for the commands it runs (as with Debian's default .bashrc, which
#   returns at once when not interactive): the connection's own cost, without whatever
#   this user's .bashrc does.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/lib-bench.sh
. "$script_dir/lib-bench.sh"

runs=${BENCH_RUNS:-10}
want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=(create status monitor)
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
if [[ ${BENCH_QUIET_SHELL:-} == 1 ]]; then
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
rows=()
row() { rows+=("$(printf '%s\t%s\t%s\t%s\t%s' "$@")"); }

# --- create ------------------------------------------------------------------------------
if [[ " ${want[*]} " == *" create "* ]]; then
    bench_log "create: $runs remote and $runs local creates, alternating"
    L=$tmp/c-local R=$tmp/c-remote
    make_home "$L"; make_home "$R"
    make_repo "$tmp/c-repo-local"; make_repo "$tmp/c-repo-remote"
    new_socket; ls_=$sock
    new_socket; rs=$sock
    ORANGE_HOME=$L ORANGE_TMUX_SOCKET=$ls_ "$bin" project add "$tmp/c-repo-local" --name here --pool-size 40 >/dev/null
    add_host "$L" box "$R" "$rs" "$tmp/c-repo-remote" there
    ORANGE_HOME=$L "$bin" host check box >/dev/null # the shared connection is up
    for i in $(seq "$runs"); do
        bench_time t env ORANGE_HOME="$L" ORANGE_TMUX_SOCKET="$ls_" "$bin" task create --project here "l/$i" s --harness sleeper
        bench_record create.local "$t"
        bench_time t env ORANGE_HOME="$L" "$bin" task create --project there "r/$i" s --harness sleeper
        bench_record create.remote "$t"
    done
    for _ in $(seq "$runs"); do
        bench_time t ssh "${ssh_opts[@]}" -o ControlMaster=no -o "ControlPath=$L/run/ssh/box" 127.0.0.1 true
        bench_record create.rtt "$t"
    done
    row "ssh round trip" "-" "$(median_ms create.rtt) ms" "-" "through the shared connection"
    row create "$(median_ms create.local) ms (local create)" "$(median_ms create.remote) ms" \
        "$(awk -v a="$(bench_stat create.remote median)" -v b="$(bench_stat create.local median)" 'BEGIN{printf "%.2f×", a/b}')" "≤ 2×"
    # What orange adds beyond the one round trip a remote command needs.
    row "create − round trip" "$(median_ms create.local) ms (local create)" \
        "$(awk -v a="$(bench_stat create.remote median)" -v r="$(bench_stat create.rtt median)" 'BEGIN{printf "%.2f ms", (a-r)/1e6}')" \
        "$(awk -v a="$(bench_stat create.remote median)" -v r="$(bench_stat create.rtt median)" -v b="$(bench_stat create.local median)" 'BEGIN{printf "%.2f×", (a-r)/b}')" "the remote side's own work"
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
        ORANGE_HOME=$R ORANGE_TMUX_SOCKET=$rs "$bin" task create --project there "r/$i" s --no-spawn >/dev/null
        ORANGE_HOME=$L2 ORANGE_TMUX_SOCKET=$ls2 "$bin" task create --project here "l/$i" s --no-spawn >/dev/null
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
        "$(awk -v a="$(bench_stat status.remote median)" -v b="$(bench_stat status.local median)" 'BEGIN{printf "%.2f×", a/b}')" "≈ 1×; ssh calls: $calls"
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
    : >"$tmp/ssh-calls"
    mkdir -p "$tmp/count"
    printf '#!/bin/sh\necho "$*" >> %s/ssh-calls\nexec %s "$@"\n' "$tmp" "$(command -v ssh)" >"$tmp/count/ssh"
    chmod +x "$tmp/count/ssh"
    for _ in $(seq "$runs"); do
        bench_time t env PATH="$tmp/count:$PATH" ORANGE_HOME="$L" ORANGE_TMUX_SOCKET="$ls_" "$bin" monitor --once
        bench_record monitor.pass "$t"
        bench_time t ssh "${ssh_opts[@]}" -o ControlMaster=no -o "ControlPath=$L/run/ssh/a" 127.0.0.1 true
        bench_record monitor.rtt "$t"
    done
    per_pass=$(awk -v n="$(wc -l <"$tmp/ssh-calls")" -v r="$runs" 'BEGIN{printf "%.1f", n/r}')
    row monitor "$(median_ms monitor.rtt) ms (one ssh round trip)" "$(median_ms monitor.pass) ms (pass, 3 hosts × 20)" \
        "$(awk -v a="$(bench_stat monitor.pass median)" -v b="$(bench_stat monitor.rtt median)" 'BEGIN{printf "%.2f×", a/b}')" "ssh calls per pass: $per_pass (3 hosts)"
fi

bench_machine_line "$@" >&2 || true
{
    printf 'figure\tbaseline\torange\tratio\ttarget / count\n'
    printf '%s\n' "${rows[@]}"
} | bench_print_table
