#!/usr/bin/env bash
# A mipopt migration plan as nvidia-smi commands (`mipopt plan --emit nvidia-smi`).
#
# usage: bash THIS [--apply] [--on-move CMD] [--pause] [--journal FILE]
#
# Without --apply it is a dry run: it prints every check and command it would run and changes
# nothing (it does not even read the GPUs). With --apply it runs them, as root, in the plan's
# order: per round, the drains, every creation, then the moves' sources destroyed, on every
# host: other hosts through `$MIPOPT_SSH -- HOST` (default ssh), the local one
# (`$MIPOPT_LOCAL_HOST`, default `hostname -s`) directly.
#
# Every operation reads its GPU's instances first (`nvidia-smi mig -lgi`): it runs where it
# finds the state the plan expects before it, is skipped where it finds the state after it, and
# stops anywhere else, saying what it found. Before a round changes anything, every GPU the
# round touches is checked the same way, on every host. Each operation done is written to the
# journal (default: THIS.journal), so after a failure (a destroy refused because the instance is
# in use, a lost connection) running the same command again continues where it stopped.
#
# A move creates its target, then runs the --on-move CMD, if given, with MIPOPT_WORKLOAD,
# MIPOPT_FROM_HOST, MIPOPT_FROM_GPU, MIPOPT_FROM_START, MIPOPT_FROM_GI, MIPOPT_TO_HOST,
# MIPOPT_TO_GPU, MIPOPT_TO_START, MIPOPT_TO_GI and MIPOPT_TO_MIG_UUID in its environment (a
# non-zero exit stops before the destroy), then destroys its source. Without a hook, --apply is
# the operator's consent and the destroy follows; --pause asks on the terminal before each one.
#
# Needs NVIDIA driver R470 or newer: `nvidia-smi mig -cgi PROFILE_ID:START` places an instance
# at an explicit start (a "profile tuple" in `nvidia-smi mig -h`); MIG mode on every GPU touched.
set -euo pipefail

die() {
  printf 'mipopt plan: %s\n' "$*" >&2
  exit 1
}

# bad_usage MESSAGE: a bad argument, exit 2 as every mipopt command
bad_usage() {
  printf 'mipopt plan: %s\n' "$*" >&2
  exit 2
}

APPLY=0
PAUSE=0
ON_MOVE=""
JOURNAL="$0.journal"
SSH="${MIPOPT_SSH:-ssh}"
MIN_DRIVER=470

parse_args() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --apply) APPLY=1 ;;
      --pause) PAUSE=1 ;;
      --on-move)
        [[ $# -ge 2 ]] || bad_usage "--on-move needs a command"
        ON_MOVE="$2"
        shift
        ;;
      --journal)
        [[ $# -ge 2 ]] || bad_usage "--journal needs a file"
        JOURNAL="$2"
        shift
        ;;
      -h | --help)
        sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
      *) bad_usage "unknown argument $(printf %q "$1") (see --help)" ;;
    esac
    shift
  done
}

# --- the operations, filled by add_op lines at the end of this file

N=0
declare -a O_ROUND O_PHASE O_OP O_REASON O_WORKLOAD O_HOST O_GPU O_PID O_START O_GI O_BEFORE O_AFTER
declare -a O_PEER_HOST O_PEER_GPU O_PEER_START O_NOTE

add_op() {
  O_ROUND[N]=$1 O_PHASE[N]=$2 O_OP[N]=$3 O_REASON[N]=$4 O_WORKLOAD[N]=$5 O_HOST[N]=$6 O_GPU[N]=$7
  O_PID[N]=$8 O_START[N]=$9 O_GI[N]=${10} O_BEFORE[N]=${11} O_AFTER[N]=${12}
  O_PEER_HOST[N]=${13} O_PEER_GPU[N]=${14} O_PEER_START[N]=${15} O_NOTE[N]=${16}
  N=$((N + 1))
}

# --- reaching the GPUs

# on HOST CMD...: run CMD on HOST, here or through ssh (every word quoted for the remote shell)
on() {
  local host="$1"
  shift
  if [[ "$host" == "$LOCAL" ]]; then
    "$@"
  else
    $SSH -- "$host" "$(printf '%q ' "$@")"
  fi
}

# show CMD...: the command, quoted, as a dry run prints it
show() {
  printf '  [%s]' "$1"
  shift
  printf ' %q' "$@"
  printf '\n'
}

# instances HOST GPU: the GPU's instances, one "PROFILE_ID START GI_ID" line each
instances() {
  local out
  if ! out=$(on "$1" nvidia-smi mig -i "$2" -lgi 2>&1); then
    [[ "$out" == *"No GPU instances found"* ]] && return 0
    die "$1 GPU $2: nvidia-smi mig -lgi failed: $out"
  fi
  awk '$1 == "|" && $3 == "MIG" && $5 ~ /^[0-9]+$/ { split($7, p, ":"); print $5, p[1], $6 }' <<<"$out"
}

# layout HOST GPU: the GPU's instances as the plan writes them: PROFILE_ID:START, by start
layout() {
  instances "$1" "$2" | sort -k2,2n -k1,1n | awk '{ printf "%s%s:%s", (NR > 1 ? " " : ""), $1, $2 }'
}

# gi_at HOST GPU PROFILE_ID START: the id of the GPU instance of that profile at that start
gi_at() {
  instances "$1" "$2" | awk -v p="$3" -v s="$4" '$1 == p && $2 == s { print $3; exit }'
}

# mig_uuid HOST GPU GI_ID: the UUID of the MIG device of that GPU instance (its first compute
# instance), from the MIG devices table of `nvidia-smi -i GPU` and the device list of `nvidia-smi -L`
mig_uuid() {
  local dev
  dev=$(on "$1" nvidia-smi -i "$2" | awk -v gi="$3" '
    /MIG devices:/ { m = 1 } /Processes:/ { m = 0 }
    m && $1 == "|" && $3 == gi && $4 ~ /^[0-9]+$/ && $5 ~ /^[0-9]+$/ { print $5; exit }')
  [[ -n "$dev" ]] || return 0
  on "$1" nvidia-smi -L | awk -v g="$2" -v d="$dev" '
    /^GPU / { cur = ($2 == g ":" || index($0, "(UUID: " g ")") > 0) }
    cur && /^ +MIG / {
      for (i = 1; i < NF; i++) if ($i == "Device" && $(i + 1) == d ":") {
        u = $0; sub(/.*UUID: /, "", u); sub(/\).*/, "", u); print u; exit
      }
    }'
}

# --- the journal: one "PLAN_HASH OPERATION" line per operation done

PLAN_HASH=""
declare -A DONE=()

read_journal() {
  PLAN_HASH=$(sed '/^# --- the plan/,$!d' "$0" | cksum | cut -d' ' -f1)
  [[ -f "$JOURNAL" ]] || return 0
  local hash i
  while read -r hash i; do
    [[ "$hash" == "$PLAN_HASH" ]] || die "the journal $JOURNAL belongs to another plan; give --journal FILE"
    DONE[$i]=1
  done <"$JOURNAL"
}

mark_done() {
  [[ $APPLY == 1 ]] || return 0
  printf '%s %s\n' "$PLAN_HASH" "$1" >>"$JOURNAL"
  DONE[$1]=1
}

# --- checks

# expect I LIVE: stop unless LIVE is the state before operation I or after it
expect() {
  local i=$1 live=$2
  [[ "$live" == "${O_BEFORE[i]}" || "$live" == "${O_AFTER[i]}" ]] && return 0
  die "round ${O_ROUND[i]}: ${O_HOST[i]} GPU ${O_GPU[i]} has [${live}]; before '${O_NOTE[i]}' the plan expects [${O_BEFORE[i]}], after it [${O_AFTER[i]}]: the GPU changed since the plan was made; import it again and plan anew"
}

# gpu_firsts [ROUND]: the first operation on each host's GPU (of ROUND and not done, if given)
gpu_firsts() {
  local i key
  declare -A seen=()
  for ((i = 0; i < N; i++)); do
    if [[ $# -gt 0 ]]; then
      [[ ${O_ROUND[i]} == "$1" && -z "${DONE[$i]:-}" ]] || continue
    fi
    key="${O_HOST[i]} ${O_GPU[i]}"
    [[ -z "${seen[$key]:-}" ]] || continue
    seen[$key]=1
    echo "$i"
  done
}

# check_driver: R470 or newer and MIG mode on, on every GPU the plan touches
check_driver() {
  local i out version mode
  for i in $(gpu_firsts); do
    out=$(on "${O_HOST[i]}" nvidia-smi --query-gpu=driver_version,mig.mode.current --format=csv,noheader -i "${O_GPU[i]}") ||
      die "${O_HOST[i]} GPU ${O_GPU[i]}: cannot read the driver version and MIG mode"
    version=${out%%,*}
    mode=$(echo "${out#*,}" | tr -d ' ')
    [[ "${version%%.*}" =~ ^[0-9]+$ && ${version%%.*} -ge $MIN_DRIVER ]] ||
      die "${O_HOST[i]} GPU ${O_GPU[i]}: driver $version; placing GPU instances needs R$MIN_DRIVER or newer"
    [[ "$mode" == "Enabled" ]] || die "${O_HOST[i]} GPU ${O_GPU[i]}: MIG mode is $mode, not Enabled"
  done
}

# preflight ROUND: before the round changes anything, every GPU it touches is where the plan says
preflight() {
  local i
  for i in $(gpu_firsts "$1"); do
    if [[ $APPLY == 0 ]]; then
      printf '  check %s GPU %s has [%s] (or [%s] if done)\n' "${O_HOST[i]}" "${O_GPU[i]}" "${O_BEFORE[i]}" "${O_AFTER[i]}"
    else
      expect "$i" "$(layout "${O_HOST[i]}" "${O_GPU[i]}")"
    fi
  done
}

# --- the operations

# handover I GI_ID: before a move's source (GI_ID) is destroyed, the hook (if any), then the pause
handover() {
  local i=$1 from_gi=$2 to_gi to_uuid
  if [[ -n "$ON_MOVE" && "${O_REASON[i]}" == "move" ]]; then
    to_gi=$(gi_at "${O_PEER_HOST[i]}" "${O_PEER_GPU[i]}" "${O_PID[i]}" "${O_PEER_START[i]}")
    [[ -n "$to_gi" ]] || die "round ${O_ROUND[i]}: the target of ${O_WORKLOAD[i]} is not on ${O_PEER_HOST[i]} GPU ${O_PEER_GPU[i]}"
    to_uuid=$(mig_uuid "${O_PEER_HOST[i]}" "${O_PEER_GPU[i]}" "$to_gi")
    MIPOPT_WORKLOAD="${O_WORKLOAD[i]}" \
      MIPOPT_FROM_HOST="${O_HOST[i]}" MIPOPT_FROM_GPU="${O_GPU[i]}" MIPOPT_FROM_START="${O_START[i]}" \
      MIPOPT_FROM_GI="$from_gi" MIPOPT_TO_HOST="${O_PEER_HOST[i]}" MIPOPT_TO_GPU="${O_PEER_GPU[i]}" \
      MIPOPT_TO_START="${O_PEER_START[i]}" MIPOPT_TO_GI="$to_gi" MIPOPT_TO_MIG_UUID="$to_uuid" \
      bash -c "$ON_MOVE" ||
      die "round ${O_ROUND[i]}: --on-move failed for ${O_WORKLOAD[i]}; its source is kept (run again to resume)"
  fi
  if [[ $PAUSE == 1 ]]; then
    local answer
    [[ -t 0 ]] || die "--pause asks on a terminal, and standard input is not one"
    read -r -p "${O_NOTE[i]}: destroy now? [y/N] " answer
    [[ "$answer" == [yY]* ]] || die "stopped before '${O_NOTE[i]}' (run again to resume)"
  fi
}

# destroy I GI_ID: the GPU instance's compute instances, then the GPU instance
destroy() {
  local i=$1 gi=$2 host=${O_HOST[$1]} gpu=${O_GPU[$1]} out
  if ! out=$(on "$host" nvidia-smi mig -i "$gpu" -gi "$gi" -dci 2>&1); then
    [[ "$out" == *"No compute instances found"* || "$out" == *"Not Found"* ]] ||
      die "round ${O_ROUND[i]}: the driver refused to destroy the compute instances of GI $gi on $host GPU $gpu: $out (when its workload has moved off, run this again: it resumes here)"
  fi
  out=$(on "$host" nvidia-smi mig -i "$gpu" -gi "$gi" -dgi 2>&1) ||
    die "round ${O_ROUND[i]}: the driver refused to destroy GI $gi on $host GPU $gpu: $out (when its workload has moved off, run this again: it resumes here)"
}

run_op() {
  local i=$1 host=${O_HOST[$1]} gpu=${O_GPU[$1]} gi
  if [[ -n "${DONE[$i]:-}" ]]; then
    printf '  done already (journal): %s\n' "${O_NOTE[i]}"
    return 0
  fi
  if [[ $APPLY == 0 ]]; then
    printf '  %s\n' "${O_NOTE[i]}"
    case "${O_OP[i]}" in
      create) show "$host" nvidia-smi mig -i "$gpu" -cgi "${O_PID[i]}:${O_START[i]}" -C ;;
      reuse) printf '    nothing to run: the idle GPU instance at start %s serves it\n' "${O_START[i]}" ;;
      destroy)
        [[ "${O_REASON[i]}" == "move" && -n "$ON_MOVE" ]] && printf '    then --on-move, then\n'
        show "$host" nvidia-smi mig -i "$gpu" -gi "${O_GI[i]:-<GI at ${O_PID[i]}:${O_START[i]}>}" -dci
        show "$host" nvidia-smi mig -i "$gpu" -gi "${O_GI[i]:-<GI at ${O_PID[i]}:${O_START[i]}>}" -dgi
        ;;
    esac
    return 0
  fi
  local live
  live=$(layout "$host" "$gpu")
  if [[ "$live" == "${O_AFTER[i]}" && "$live" != "${O_BEFORE[i]}" ]]; then
    printf '  done already: %s\n' "${O_NOTE[i]}"
    mark_done "$i"
    return 0
  fi
  expect "$i" "$live"
  printf '  %s\n' "${O_NOTE[i]}"
  case "${O_OP[i]}" in
    create)
      on "$host" nvidia-smi mig -i "$gpu" -cgi "${O_PID[i]}:${O_START[i]}" -C >/dev/null ||
        die "round ${O_ROUND[i]}: nvidia-smi could not create '${O_NOTE[i]}'"
      ;;
    reuse) ;;
    destroy)
      gi=$(gi_at "$host" "$gpu" "${O_PID[i]}" "${O_START[i]}")
      [[ -z "${O_GI[i]}" || "$gi" == "${O_GI[i]}" ]] ||
        die "round ${O_ROUND[i]}: $host GPU $gpu: the instance at start ${O_START[i]} is GI $gi, not ${O_GI[i]}: the GPU changed since the plan was made"
      handover "$i" "$gi"
      destroy "$i" "$gi"
      ;;
  esac
  [[ "$(layout "$host" "$gpu")" == "${O_AFTER[i]}" ]] ||
    die "round ${O_ROUND[i]}: after '${O_NOTE[i]}', $host GPU $gpu is not [${O_AFTER[i]}]"
  mark_done "$i"
}

main() {
  parse_args "$@"
  printf '%s\n' "$TITLE"
  if [[ $N == 0 ]]; then
    echo "nothing to do: the current placement is the target"
    return 0
  fi
  [[ $INDEX_GUESSED == 0 ]] ||
    echo "note: the instance does not record GPU device indices; each is its position among its host's GPUs (check with nvidia-smi -L)"
  read_journal
  if [[ $APPLY == 1 ]]; then
    LOCAL="${MIPOPT_LOCAL_HOST:-$(hostname -s)}"
    check_driver
  else
    echo "dry run: every check and command, nothing run (--apply to act)"
  fi
  local i round="" phase=""
  for ((i = 0; i < N; i++)); do
    if [[ "${O_ROUND[i]}" != "$round" ]]; then
      round=${O_ROUND[i]}
      phase=""
      printf 'round %s\n' "$round"
      preflight "$round"
    fi
    if [[ "${O_PHASE[i]}" != "$phase" ]]; then
      phase=${O_PHASE[i]}
      printf ' %s\n' "$phase"
    fi
    run_op "$i"
  done
  if [[ $APPLY == 0 ]]; then
    echo "dry run: nothing changed"
    return 0
  fi
  echo "done: the plan is applied; state reached:"
  for i in $(gpu_firsts); do
    printf '  %s GPU %s: [%s]\n' "${O_HOST[i]}" "${O_GPU[i]}" "$(layout "${O_HOST[i]}" "${O_GPU[i]}")"
  done
}
