#!/usr/bin/env bash
# Runs experiments/slurm/sweep.sbatch under a real Slurm, on this machine,
# without a GPU: a single-node cluster (munged, slurmctld, slurmd) started
# here with every file under one temporary directory, a job array of
# shards on the replay backend, one task lost mid-sweep and resubmitted
# with its index, the merge, and a check that the merged results equal a
# single-process sweep of the same plan point for point. A second task is
# cancelled mid-sweep (what a preemption does: SIGTERM) and resubmitted
# together with the lost one.
#
#   make slurm-test          (or: experiments/slurm/test.sh)
#
# Needs Debian or Ubuntu, and root or sudo when slurm-wlm and munge are
# not installed yet (apt-get install -y slurm-wlm munge). Exits 0 on
# success, 1 on a failure and 77 when the cluster cannot be set up here
# (no apt, no root): a skip, with the reason, for CI.
#
# Environment: SHARDS (default 4), KEEP=1 keeps the temporary directory
# (the cluster's logs, the shards, the merge) for a look afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
START=$(date +%s)

SPEC=experiments/slice.yaml
# make-sweep.jsonl was measured on an H200 with the kernels of today's
# plan. --replay-match config keeps the test meaningful after a kernel
# change too: a point whose hash moved on gets its configuration's
# record (and says so) instead of "not recorded".
RECORDED=experiments/results/h200/make-sweep.jsonl
SHARDS=${SHARDS:-4}
FAILING=$((SHARDS / 2)) # the index whose first run is lost mid-sweep
STOP_AT=3               # ... at its third point
CANCELLED=1             # the index whose first run is cancelled mid-sweep
DELAY=300ms             # ... its points taking this long
((SHARDS >= 3)) || { echo "SHARDS=$SHARDS: want at least 3" >&2; exit 2; }

log() { printf '[%4ds] %s\n' $(($(date +%s) - START)) "$*"; }
skip() {
	echo "slurm-test: skipped: $*"
	exit 77
}
fail() {
	echo "slurm-test: FAILED: $*" >&2
	exit 1
}

# --- packages ---------------------------------------------------------
need=()
for cmd in slurmctld slurmd sbatch munged mungekey; do
	command -v "$cmd" >/dev/null || PATH=$PATH:/usr/sbin:/sbin command -v "$cmd" >/dev/null || need+=("$cmd")
done
export PATH=$PATH:/usr/sbin:/sbin
if ((${#need[@]})); then
	command -v apt-get >/dev/null || skip "no ${need[*]} and no apt-get to install slurm-wlm and munge (Debian or Ubuntu)"
	SUDO=
	if [ "$(id -u)" != 0 ]; then
		sudo -n true 2>/dev/null || skip "installing slurm-wlm and munge needs root or sudo"
		SUDO="sudo -n"
	fi
	log "installing slurm-wlm and munge"
	{ $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q slurm-wlm munge; } >/dev/null ||
		skip "apt-get install slurm-wlm munge failed (no package registry?)"
fi
log "$(slurmctld -V), $(munged -V 2>&1 | awk '{print $1; exit}')"

# --- ktune ------------------------------------------------------------
command -v go >/dev/null || fail "go is not installed"
CGO_ENABLED=0 go build -trimpath -o bin/ktune ./cmd/ktune
KTUNE=$PWD/bin/ktune

# --- the cluster ------------------------------------------------------
T=$(mktemp -d "${TMPDIR:-/tmp}/ktune-slurm.XXXXXX")
pids=()
cleanup() {
	local rc=$?
	if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
		scancel --quiet --user "$(id -un)" 2>/dev/null || true
	fi
	for pf in "$T"/slurmd.pid "$T"/slurmctld.pid "$T"/munged.pid; do
		[ -s "$pf" ] && kill "$(cat "$pf")" 2>/dev/null || true
	done
	sleep 1
	if ((rc != 0)); then
		for f in "$T"/*.log; do
			[ -f "$f" ] && { echo "--- $f (last lines)"; tail -n 15 "$f"; }
		done
	fi
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

user=$(id -un)
mkdir -p "$T/state" "$T/spool" "$T/out" "$T/logs" "$T/munge"
# munged wants its socket's directory open to all (clients of any user
# connect) and its key private.
chmod 755 "$T" "$T/munge"
mungekey -c -k "$T/munge.key"
munged --socket="$T/munge/munge.sock" --key-file="$T/munge.key" --pid-file="$T/munged.pid" \
	--log-file="$T/munged.log" --seed-file="$T/munged.seed"

# Ports of their own, so that another Slurm on the machine is not met.
port=$((20000 + RANDOM % 20000))
export SLURM_CONF=$T/slurm.conf
# The node declares more CPUs than this machine may have and four GPUs it
# does not have (config_overrides): the job array asks for what the
# sample asks (8 CPUs and 1 GPU per task) and four tasks run at once.
cat >"$SLURM_CONF" <<EOF
ClusterName=ktune-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MinJobAge=600
SchedulerParameters=sched_interval=1
NodeName=ktune-node NodeAddr=127.0.0.1 CPUs=32 Gres=gpu:4 State=UNKNOWN
PartitionName=test Nodes=ktune-node Default=YES MaxTime=INFINITE State=UP
EOF
# slurmd counts a GPU per device file: four links to /dev/null stand in.
for i in 0 1 2 3; do ln -s /dev/null "$T/gpu$i"; done
echo "NodeName=ktune-node Name=gpu File=$T/gpu[0-3]" >"$T/gres.conf"

slurmctld -i
slurmd -N ktune-node
for _ in $(seq 60); do
	sinfo -h -o %t 2>/dev/null | grep -qx idle && break
	sleep 1
done
sinfo -h -o %t | grep -qx idle || fail "the node did not come up: $(sinfo 2>&1)"
log "single-node Slurm up (slurmctld port $port, state in $T)"

# --- the job array ----------------------------------------------------
# The shim plays a lost node: the first run of index $FAILING stops at its
# $STOP_AT-th point without recording it (the replay backend honours
# KTUNE_REPLAY_STOP_AT); and a slow one: the first run of index $CANCELLED
# takes $DELAY a point (KTUNE_REPLAY_DELAY), long enough to be cancelled
# in the middle. Everything else is the sample as written.
cat >"$T/ktune-shim" <<EOF
#!/bin/sh
if [ "\$1" = sweep ] && [ "\$SLURM_ARRAY_TASK_ID" = $FAILING ] && mkdir "$T/lost-once" 2>/dev/null; then
	export KTUNE_REPLAY_STOP_AT=$STOP_AT
fi
if [ "\$1" = sweep ] && [ "\$SLURM_ARRAY_TASK_ID" = $CANCELLED ] && mkdir "$T/slow-once" 2>/dev/null; then
	export KTUNE_REPLAY_DELAY=$DELAY
fi
exec "$KTUNE" "\$@"
EOF
chmod +x "$T/ktune-shim"

sweep_flags=(--backend replay --replay-from "$RECORDED" --replay-match config)
submit() { # ARRAY: submits the sample and prints the job id
	KTUNE=$T/ktune-shim sbatch --parsable --array="$1" --output="$T/logs/slurm-%A_%a.log" \
		experiments/slurm/sweep.sbatch "$SPEC" "$SHARDS" "$T/out" "${sweep_flags[@]}"
}
wait_job() { # JOBID
	for _ in $(seq 300); do
		[ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
		sleep 1
	done
	fail "job $1 still queued or running after 300 s: $(squeue -j "$1")"
}
# task_states JOBID: "INDEX STATE EXITCODE" per array task.
task_states() {
	scontrol -o show job "$1" | sed -E 's/.*ArrayTaskId=([0-9]+) .*JobState=([A-Z_]+) .*ExitCode=([0-9:]+).*/\1 \2 \3/' | sort -n
}

job=$(submit "0-$((SHARDS - 1))")
log "submitted job array $job: $SHARDS shards of $SPEC"
# Cancel the slow task once it has recorded a few points.
slow=$T/out/shard-$CANCELLED/results.jsonl
for _ in $(seq 600); do
	[ -f "$slow" ] && (($(wc -l <"$slow") >= 3)) && break
	sleep 0.1
done
scancel "${job}_$CANCELLED"
log "cancelled task $CANCELLED after $(wc -l <"$slow") points"
wait_job "$job"
states=$(task_states "$job")
echo "$states" | sed 's/^/    task /'
for i in $(seq 0 $((SHARDS - 1))); do
	want=COMPLETED
	((i == FAILING)) && want=FAILED
	((i == CANCELLED)) && want=CANCELLED
	echo "$states" | grep -q "^$i $want " || fail "task $i: want $want, got: $(echo "$states" | grep "^$i " || echo none)"
done
n=$(wc -l <"$T/out/shard-$FAILING/results.jsonl")
((n == STOP_AT - 1)) || fail "the lost task recorded $n points, want $((STOP_AT - 1))"
c=$(wc -l <"$slow")
log "task $FAILING was lost at its point $STOP_AT with $n points recorded, task $CANCELLED cancelled with $c; the others completed"

# A merge now is short of the lost and the cancelled tasks' points: it
# must say which shards stopped early, and hold fewer records than the plan.
"$KTUNE" merge -o "$T/partial" "$T"/out/shard-* >"$T/partial.txt" 2>&1 || true
points=$("$KTUNE" plan "$SPEC" --count | sed -n 's/^points: \([0-9]*\).*/\1/p')
[ -n "$points" ] || fail "ktune plan $SPEC --count gave no point count"
got=$(grep -o 'merged [0-9]* records' "$T/partial.txt" | grep -o '[0-9]*' || echo 0)
((got < points)) || fail "a merge before the resubmission holds $got records of $points"
for i in $CANCELLED $FAILING; do
	grep -q "shard-$i holds .* stopped early" "$T/partial.txt" || fail "merge did not report shard $i as stopped early: $(cat "$T/partial.txt")"
done
log "a merge now would hold $got of the plan's $points points, and says shards $CANCELLED and $FAILING stopped early"

job2=$(submit "$CANCELLED,$FAILING")
log "resubmitted indices $CANCELLED and $FAILING as job array $job2"
wait_job "$job2"
for i in $CANCELLED $FAILING; do
	task_states "$job2" | grep -q "^$i COMPLETED " || fail "the resubmitted task $i: $(task_states "$job2")"
	tlog=$T/logs/slurm-${job2}_$i.log
	grep -q "already recorded" "$tlog" || fail "the resubmitted task $i did not resume: $(tail -n 5 "$tlog")"
	log "index $i resumed: $(grep -o '[0-9]* planned, [0-9]* already recorded, [0-9]* run' "$tlog")"
done

# --- merge and check --------------------------------------------------
"$KTUNE" merge -o "$T/merged" "$T"/out/shard-*
"$KTUNE" sweep "$SPEC" -o "$T/single" "${sweep_flags[@]}" >"$T/single.txt" 2>&1
grep -q "^$points planned, 0 already recorded, $points run ($points ok" "$T/single.txt" ||
	fail "the single-process sweep did not replay every point: $(tail -n 3 "$T/single.txt")"
grep "^replayed, not measured" "$T/single.txt"
go run ./experiments/slurm/samerecords "$T/merged" "$T/single"

# The merged results are replays: report refuses them unless asked.
if "$KTUNE" report "$T/merged" -o "$T/report" >/dev/null 2>"$T/refused.txt"; then
	fail "ktune report took replayed records as measurements"
fi
"$KTUNE" report "$T/merged" -o "$T/report" --allow-replayed >/dev/null 2>&1 || fail "ktune report --allow-replayed failed"
log "report refuses the replayed merge and renders it with --allow-replayed"
log "PASS in $(($(date +%s) - START)) s"
