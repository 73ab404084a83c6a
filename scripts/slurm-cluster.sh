#!/usr/bin/env bash
# slurm-cluster.sh: a 4-node Slurm cluster on this one machine, for the
# whole-job tests (ompdtool job). Debian's packages, a fresh state
# directory, every daemon stopped by its pid file.
#
#   scripts/slurm-cluster.sh install      install the packages (Slurm, munge,
#                                         Open MPI, PMIx, MPICH, strace) that
#                                         are missing
#   scripts/slurm-cluster.sh start DIR    start munged, slurmctld and slurmd
#                                         n1..n4 with their state in DIR (made
#                                         fresh; ports from SLURM_CLUSTER_PORT,
#                                         else random); prints SLURM_CONF=DIR/slurm.conf
#   scripts/slurm-cluster.sh stop DIR     stop them (SIGTERM, SIGKILL after 10 s)
#
# Clients only need SLURM_CONF=DIR/slurm.conf in their environment.
set -euo pipefail

packages=(slurmctld slurmd slurm-client munge libpmix2 openmpi-bin libopenmpi-dev mpich libmpich-dev strace)

install() {
	local p need=()
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || need+=("$p")
	done
	((${#need[@]})) || return 0
	echo "slurm-cluster: installing ${need[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || true
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# pids DIR: the pid files of the daemons.
pidfiles() {
	local dir=$1
	echo "$dir/run/munged.pid" "$dir/run/slurmctld.pid" "$dir"/run/slurmd-n*.pid
}

# leftovers DIR: the processes of the cluster's jobs (slurmstepd and the
# tasks), found by the SLURM_CONF of DIR in their environment.
leftovers() {
	local dir=$1 e pid
	for e in /proc/[0-9]*/environ; do
		pid=${e#/proc/}
		pid=${pid%/environ}
		[[ "$pid" == "$$" ]] && continue
		{ tr '\0' '\n' <"$e"; } 2>/dev/null | grep -Fx "SLURM_CONF=$dir/slurm.conf" >/dev/null && echo "$pid"
	done
	return 0
}

stop() {
	local dir=$1 f pid left i
	shopt -s nullglob
	# Cancel the jobs first, while the daemons can still end them.
	if [[ -f "$dir/run/slurmctld.pid" ]]; then
		SLURM_CONF="$dir/slurm.conf" scancel --partition=debug 2>/dev/null || true
		for ((i = 0; i < 50; i++)); do
			[[ -z "$(SLURM_CONF="$dir/slurm.conf" squeue -h 2>/dev/null)" ]] && break
			sleep 0.2
		done
	fi
	local pids=()
	for f in $(pidfiles "$dir"); do
		[[ -f "$f" ]] || continue
		pid=$(<"$f")
		[[ "$pid" =~ ^[0-9]+$ ]] || continue
		kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
	done
	for pid in $(leftovers "$dir"); do
		kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
	done
	((${#pids[@]})) || return 0
	for ((i = 0; i < 100; i++)); do
		left=()
		for pid in "${pids[@]}"; do
			kill -0 "$pid" 2>/dev/null && left+=("$pid")
		done
		((${#left[@]})) || return 0
		sleep 0.1
	done
	for pid in "${left[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
}

# ports_free BASE: no TCP socket of this machine is bound to a port of
# BASE..BASE+4 (from /proc/net/tcp and tcp6: local port in hex).
ports_free() {
	local base=$1 f sl local rest port
	for f in /proc/net/tcp /proc/net/tcp6; do
		[[ -r "$f" ]] || continue
		while read -r sl local rest; do
			[[ "$local" == *:* ]] || continue # the header
			port=$((16#${local##*:}))
			((port >= base && port <= base + 4)) && return 1
		done <"$f"
	done
	return 0
}

start() {
	local dir=$1 host n i
	rm -rf "$dir"
	mkdir -p "$dir"/{run,log,spool,tmp,state,munge}
	chmod 755 "$dir" "$dir/munge"
	host=$(hostname)
	# Ports: slurmctld on base, slurmd n1..n4 on base+1..base+4; random
	# unless SLURM_CLUSTER_PORT says, so that two clusters (two test runs
	# on one machine) do not meet, and not one that something listens on.
	local base=${SLURM_CLUSTER_PORT:-}
	if [[ -z "$base" ]]; then
		for ((i = 0; i < 100; i++)); do
			base=$((20000 + RANDOM % 20000))
			ports_free "$base" && break
		done
	fi
	if ! ports_free "$base"; then
		echo "slurm-cluster: ports $base-$((base + 4)) are in use" >&2
		return 1
	fi
	dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
	chmod 600 "$dir/munge/munge.key"
	munged --force -S "$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
		--pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
		--seed-file="$dir/munge/seed"
	for n in 1 2 3 4; do
		mkdir -p "$dir/spool/n$n" "$dir/tmp/n$n"
	done
	# Job ids from a random start: two clusters on one machine (two test
	# runs) do not number their jobs alike, so that nothing that goes by
	# a job's id can take one's processes for the other's.
	local firstjob=$((1000 + RANDOM * 30))
	cat >"$dir/slurm.conf" <<EOF
ClusterName=ompdtest
FirstJobId=$firstjob
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=1
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=n[1-4] NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + 1))-$((base + 4)) CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP
EOF
	export SLURM_CONF="$dir/slurm.conf"
	slurmctld -c
	for n in 1 2 3 4; do
		slurmd -N "n$n"
	done
	for ((i = 0; i < 300; i++)); do
		if [[ "$(sinfo -h -o '%D %t' 2>/dev/null)" == "4 idle" ]]; then
			echo "SLURM_CONF=$SLURM_CONF"
			return 0
		fi
		sleep 0.1
	done
	echo "slurm-cluster: the nodes did not come up:" >&2
	sinfo >&2 || true
	tail -n 20 "$dir"/log/*.log >&2 || true
	stop "$dir"
	return 1
}

case "${1:-}" in
install) install ;;
start) start "${2:?state directory}" ;;
stop) stop "${2:?state directory}" ;;
*)
	echo "usage: $0 install | start DIR | stop DIR" >&2
	exit 2
	;;
esac
