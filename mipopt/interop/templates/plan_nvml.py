#!/usr/bin/env python3
"""A mipopt migration plan over NVML (`mipopt plan --emit nvml-python`), run on each host.

usage: python3 THIS [--host NAME] [--round N] [--phase drain|create|destroy] [--apply]
                    [--on-move CMD] [--pause] [--journal FILE] [--remote-targets-ready]

Without --apply it is a dry run: it prints every check and operation it would run on this host
and changes nothing (it does not load NVML). With --apply it acts, as root, in the plan's order:
per round, the drains, every creation, then the moves' sources destroyed. --host defaults to
this machine's short host name; --round and --phase restrict the run.

Every operation reads its GPU's instances first: it runs where it finds the state the plan
expects before it, is skipped where it finds the state after it, and stops anywhere else,
saying what it found. Before a round changes anything, every GPU of this host that the round
touches is checked. Each operation done is written to the journal (default: THIS.HOST.journal),
so after a failure (a destroy refused because the instance is in use) the same command
continues where it stopped.

A move creates its target, then runs the --on-move CMD, if given, with MIPOPT_WORKLOAD,
MIPOPT_FROM_HOST, MIPOPT_FROM_GPU, MIPOPT_FROM_START, MIPOPT_FROM_GI, MIPOPT_TO_HOST,
MIPOPT_TO_GPU, MIPOPT_TO_START, MIPOPT_TO_GI and MIPOPT_TO_MIG_UUID in its environment (a
non-zero exit stops before the destroy), then destroys its source; --pause asks on the terminal
before each destroy. A move between hosts creates its target on the other host: this host's
destroy of its source is refused until the operator has run that round's create phase there
and says so with --remote-targets-ready (the nvidia-smi form, run from one machine, checks the
other hosts itself).

Needs nvidia-ml-py (`pip install nvidia-ml-py`, 11.470 or newer) and an NVIDIA driver R470 or
newer (nvmlDeviceCreateGpuInstanceWithPlacement); checks the driver and MIG mode on every GPU it
touches before any change.
"""

import argparse
import ctypes
import hashlib
import json
import os
import socket
import subprocess
import sys

PLAN: dict = {}  # replaced by mipopt
PHASES = tuple(PLAN.get("phases", ()))  # drain, create, destroy: mipopt.interop.emit.PHASES
MIN_DRIVER = 470


class Stop(Exception):
    """One line saying why the run stops; the journal keeps what was done."""


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def where(op):
    return f"{op['host']} GPU {op['gpu_uuid'] or op['gpu_index']}"


def describe(op):
    return (
        f"round {op['round']} {op['phase']}: {op['op']} {op['profile']} (profile id {op['profile_id']}) "
        f"at start {op['start']} on {where(op)} ({op['workload'] or 'idle'}: {op['comment']})"
    )


class Gpus:
    """This host's GPUs through NVML: handles, their GPU instances, creation and destruction."""

    def __init__(self, nvml):
        self.nvml = nvml
        self.handles = {}

    def handle(self, op):
        key = op["gpu_uuid"] or op["gpu_index"]
        if key not in self.handles:
            if op["gpu_uuid"]:
                self.handles[key] = self.nvml.nvmlDeviceGetHandleByUUID(op["gpu_uuid"])
            else:
                self.handles[key] = self.nvml.nvmlDeviceGetHandleByIndex(op["gpu_index"])
        return self.handles[key]

    def profile_ids(self, handle):
        """The GPU-instance profile ids of the device (the -lgip ids), from every profile constant."""
        nvml, ids = self.nvml, []
        for constant in range(nvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
            try:
                info = nvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, constant)
            except nvml.NVMLError:
                continue  # a profile this device does not have
            ids.append((info.id, max(info.instanceCount, 1)))
        return ids

    def instances(self, op):
        """The GPU's instances: (profile id, start, GI id, handle), by start."""
        nvml, handle, found = self.nvml, self.handle(op), []
        for profile_id, most in self.profile_ids(handle):
            count = ctypes.c_uint(0)
            array = (nvml.c_nvmlGpuInstance_t * most)()
            nvml.nvmlDeviceGetGpuInstances(handle, profile_id, array, ctypes.byref(count))
            for k in range(count.value):
                info = nvml.nvmlGpuInstanceGetInfo(array[k])
                found.append((info.profileId, info.placement.start, info.id, array[k]))
        return sorted(found, key=lambda t: (t[1], t[0]))

    def layout(self, op):
        return [f"{p}:{s}" for p, s, _, _ in self.instances(op)]

    def at(self, op, start=None):
        """The GPU instance of the operation's profile at its start: (GI id, handle) or None."""
        start = op["start"] if start is None else start
        return next(
            ((i, h) for p, s, i, h in self.instances(op) if (p, s) == (op["profile_id"], start)), None
        )

    def compute_profiles(self, gi):
        nvml = self.nvml
        for constant in range(nvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
            try:
                yield nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                    gi, constant, nvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
                )
            except nvml.NVMLError:
                continue  # a compute-instance profile this GPU instance does not offer

    def compute_instances(self, gi):
        nvml, out = self.nvml, []
        for info in self.compute_profiles(gi):
            count = ctypes.c_uint(0)
            array = (nvml.c_nvmlComputeInstance_t * max(info.instanceCount, 1))()
            nvml.nvmlGpuInstanceGetComputeInstances(gi, info.id, array, ctypes.byref(count))
            out += [array[k] for k in range(count.value)]
        return out

    def create(self, op):
        nvml = self.nvml
        placement = nvml.c_nvmlGpuInstancePlacement_t()
        placement.start, placement.size = op["start"], op["size"]
        gi = nvml.nvmlDeviceCreateGpuInstanceWithPlacement(
            self.handle(op), op["profile_id"], ctypes.byref(placement)
        )
        self.default_compute_instance(op, gi)

    def default_compute_instance(self, op, gi):
        """All of the GPU instance's slices, engines shared: what `nvidia-smi mig -cgi ... -C` makes."""
        nvml = self.nvml
        constant = getattr(nvml, f"NVML_COMPUTE_INSTANCE_PROFILE_{op['compute']}_SLICE")
        info = nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gi, constant, nvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
        )
        nvml.nvmlGpuInstanceCreateComputeInstance(gi, info.id)

    def destroy(self, op, gi):
        nvml = self.nvml
        for ci in self.compute_instances(gi):
            nvml.nvmlComputeInstanceDestroy(ci)
        nvml.nvmlGpuInstanceDestroy(gi)

    def mig_uuid(self, op, gi_id):
        """The UUID of the MIG device of GPU instance ``gi_id``; "" when NVML does not say."""
        nvml, handle = self.nvml, self.handle(op)
        try:
            for index in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
                try:
                    mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, index)
                except nvml.NVMLError:
                    continue  # no MIG device at that index
                if nvml.nvmlDeviceGetGpuInstanceId(mig) == gi_id:
                    return text(nvml.nvmlDeviceGetUUID(mig))
        except nvml.NVMLError:
            pass
        return ""


class Run:
    def __init__(self, args, ops, gpus):
        self.args, self.ops, self.gpus = args, ops, gpus
        self.journal = args.journal or f"{sys.argv[0]}.{args.host}.journal"
        self.done = set()
        self.plan_hash = str(hash_plan())

    # --- the journal

    def read_journal(self):
        if not os.path.exists(self.journal):
            return
        with open(self.journal) as f:
            for line in f:
                plan_hash, _, number = line.strip().partition(" ")
                if plan_hash != self.plan_hash:
                    raise Stop(f"the journal {self.journal} belongs to another plan; give --journal FILE")
                self.done.add(int(number))

    def mark_done(self, op):
        with open(self.journal, "a") as f:
            f.write(f"{self.plan_hash} {op['number']}\n")
        self.done.add(op["number"])

    # --- checks

    def expect(self, op, live):
        if live in (op["before"], op["after"]):
            return
        raise Stop(
            f"round {op['round']}: {where(op)} has [{' '.join(live)}]; before '{describe(op)}' the plan "
            f"expects [{' '.join(op['before'])}], after it [{' '.join(op['after'])}]: the GPU changed "
            "since the plan was made; import it again and plan anew"
        )

    def check_driver(self):
        nvml = self.gpus.nvml
        if not hasattr(nvml, "nvmlDeviceCreateGpuInstanceWithPlacement"):
            raise Stop(
                "this nvidia-ml-py has no nvmlDeviceCreateGpuInstanceWithPlacement: install 11.470 or newer"
            )
        version = text(nvml.nvmlSystemGetDriverVersion())
        major = version.split(".")[0]
        if not (major.isascii() and major.isdigit()) or int(major) < MIN_DRIVER:
            raise Stop(f"driver {version}; placing GPU instances needs R{MIN_DRIVER} or newer")
        for op in unique_gpus(self.ops):
            current, _ = nvml.nvmlDeviceGetMigMode(self.gpus.handle(op))
            if current != nvml.NVML_DEVICE_MIG_ENABLE:
                raise Stop(f"{where(op)}: MIG mode is off")

    def preflight(self, ops):
        for op in unique_gpus([o for o in ops if o["number"] not in self.done]):
            if not self.args.apply:
                print(
                    f"  check {where(op)} has [{' '.join(op['before'])}] (or [{' '.join(op['after'])}] if done)"
                )
            else:
                self.expect(op, self.gpus.layout(op))

    # --- operations

    def handover(self, op, source_gi):
        """Before a move's source is destroyed: the other host's word, the hook, the pause."""
        peer = op["peer"]
        if op["reason"] == "move" and peer["host"] != op["host"] and not self.args.remote_targets_ready:
            raise Stop(
                f"round {op['round']}: {op['workload']} moves to {peer['host']}; destroy its source here only "
                f"once its target exists there: run `--round {op['round']} --phase create --apply` on "
                f"{peer['host']}, then this with --remote-targets-ready"
            )
        if self.args.on_move and op["reason"] == "move":
            target_gi = ""
            if peer["host"] == op["host"]:
                found = self.gpus.at({**op, **peer}, peer["start"])
                if found is None:
                    raise Stop(
                        f"round {op['round']}: the target of {op['workload']} is not at {peer['gpu']}:{peer['start']}"
                    )
                target_gi = found[0]
            env = dict(
                os.environ,
                MIPOPT_WORKLOAD=op["workload"],
                MIPOPT_FROM_HOST=op["host"],
                MIPOPT_FROM_GPU=str(op["gpu_uuid"] or op["gpu_index"]),
                MIPOPT_FROM_START=str(op["start"]),
                MIPOPT_FROM_GI=str(source_gi),
                MIPOPT_TO_HOST=peer["host"],
                MIPOPT_TO_GPU=str(peer["gpu_uuid"] or peer["gpu_index"]),
                MIPOPT_TO_START=str(peer["start"]),
                MIPOPT_TO_GI=str(target_gi),
                MIPOPT_TO_MIG_UUID="" if target_gi == "" else self.gpus.mig_uuid({**op, **peer}, target_gi),
            )
            if subprocess.run(["bash", "-c", self.args.on_move], env=env).returncode != 0:
                raise Stop(
                    f"round {op['round']}: --on-move failed for {op['workload']}; its source is kept (run again to resume)"
                )
        if self.args.pause:
            if not sys.stdin.isatty():
                raise Stop("--pause asks on a terminal, and standard input is not one")
            if not input(f"{describe(op)}: destroy now? [y/N] ").lower().startswith("y"):
                raise Stop(f"stopped before '{describe(op)}' (run again to resume)")

    def run(self, op):
        if op["number"] in self.done:
            print(f"  done already (journal): {describe(op)}")
            return
        if not self.args.apply:
            print(f"  {describe(op)}")
            if op["op"] == "destroy" and op["reason"] == "move" and op["peer"]["host"] != op["host"]:
                print(f"    only once its target exists on {op['peer']['host']} (--remote-targets-ready)")
            return
        nvml, live = self.gpus.nvml, self.gpus.layout(op)
        if live == op["after"] and live != op["before"]:
            print(f"  done already: {describe(op)}")
            if op["op"] == "create":
                found = self.gpus.at(op)
                if found is not None and not self.gpus.compute_instances(found[1]):
                    self.gpus.default_compute_instance(op, found[1])  # a create cut off before it
            self.mark_done(op)
            return
        self.expect(op, live)
        print(f"  {describe(op)}")
        try:
            if op["op"] == "create":
                self.gpus.create(op)
            elif op["op"] == "destroy":
                gi_id, gi = self.gpus.at(op)
                if op["gpu_instance_id"] is not None and gi_id != op["gpu_instance_id"]:
                    raise Stop(
                        f"round {op['round']}: {where(op)}: the instance at start {op['start']} is GI {gi_id}, "
                        f"not {op['gpu_instance_id']}: the GPU changed since the plan was made"
                    )
                self.handover(op, gi_id)
                self.gpus.destroy(op, gi)
        except nvml.NVMLError as err:
            reason = str(err)
            if isinstance(err, nvml.NVMLError_InUse):
                reason += " (when its workload has moved off, run this again: it resumes here)"
            raise Stop(f"round {op['round']}: the driver refused '{describe(op)}': {reason}") from None
        if self.gpus.layout(op) != op["after"]:
            raise Stop(
                f"round {op['round']}: after '{describe(op)}', {where(op)} is not [{' '.join(op['after'])}]"
            )
        self.mark_done(op)


def hash_plan():
    return hashlib.sha256(json.dumps(PLAN, sort_keys=True).encode()).hexdigest()[:16]


def unique_gpus(ops):
    seen, out = set(), []
    for op in ops:
        if (op["host"], op["gpu"]) not in seen:
            seen.add((op["host"], op["gpu"]))
            out.append(op)
    return out


def main(argv=None, nvml=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=socket.gethostname().split(".")[0])
    parser.add_argument("--round", type=int)
    parser.add_argument("--phase", choices=PHASES)
    parser.add_argument("--apply", action="store_true", help="act (default: only print)")
    parser.add_argument("--on-move", metavar="CMD", help="run before each move's source is destroyed")
    parser.add_argument("--pause", action="store_true", help="ask before each destroy")
    parser.add_argument("--journal", metavar="FILE", help="the operations done (default THIS.HOST.journal)")
    parser.add_argument(
        "--remote-targets-ready", action="store_true", help="the round's creates on the other hosts are done"
    )
    args = parser.parse_args(argv)
    operations = [dict(op, number=n) for n, op in enumerate(PLAN["operations"])]
    print(PLAN["title"])
    if not any(op["host"] == args.host for op in operations):
        hosts = sorted({op["host"] for op in operations})
        print(
            f"nothing to do on host {args.host!r} (hosts of the plan: {', '.join(map(repr, hosts)) or 'none'})"
        )
        return 0
    ops = [
        op
        for op in operations
        if op["host"] == args.host
        and (args.round is None or op["round"] == args.round)
        and (args.phase is None or op["phase"] == args.phase)
    ]
    if not args.apply:
        print("dry run: every check and operation, nothing run (--apply to act)")
        walk(Run(args, ops, None), ops)
        print("dry run: nothing changed")
        return 0
    if nvml is None:
        import pynvml as nvml
    nvml.nvmlInit()
    try:
        run = Run(args, ops, Gpus(nvml))
        run.read_journal()
        run.check_driver()
        walk(run, ops)
        print("done: state reached:")
        for op in unique_gpus(ops):
            print(f"  {where(op)}: [{' '.join(run.gpus.layout(op))}]")
    except Stop as stop:
        print(f"mipopt plan: {stop}", file=sys.stderr)
        return 1
    finally:
        nvml.nvmlShutdown()
    return 0


def walk(run, ops):
    current = None
    for op in ops:
        if op["round"] != current:
            current = op["round"]
            print(f"round {current}")
            run.preflight([o for o in ops if o["round"] == current])
        run.run(op)


if __name__ == "__main__":
    sys.exit(main())
