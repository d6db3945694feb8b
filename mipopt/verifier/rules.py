"""The rules one state of the cluster must obey, checked from the catalog's placement lists.

One rule set serves :func:`mipopt.verifier.verify` (a solution: one instance per workload)
and :func:`mipopt.verifier.verify_plan` (the largest state of a plan's round, where a
moving workload holds two instances). A state is a list of instances, each named by a
*holder* id (the JSON path that created it, such as ``placements[3]`` or
``rounds[1].moves[0].to``); one workload may appear more than once.

Rules, in the order their breaches are reported: per instance, the GPU exists, its model
is allowed for the workload and has its profile (a memory-sized workload: some profile that
fits it, and the one chosen, if any, is one of :meth:`~mipopt.instance.Instance.profiles_on`;
a running one's is :meth:`~mipopt.instance.Instance.profile_on`, the profile it runs at on its
GPU's model, the smallest that fits on another), and the start is legal for that profile; then no two
instances overlap, per-profile maximum counts, at most one ``+me`` instance per GPU,
compute slices, host cpu and ram.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from mipopt.catalog import Profile
from mipopt.instance import Instance

__all__ = ["Breach", "Held", "StateCheck", "check_state"]

#: One instance of a state: (holder id, workload id, GPU id, start), and optionally the profile
#: chosen for it (a memory-sized workload's; None or left out: :meth:`Instance.profile_on`).
Held = tuple[str, str, str, int] | tuple[str, str, str, int, str | None]


@dataclass(frozen=True, slots=True)
class Breach:
    """One broken rule.

    Attributes
    ----------
    rule
        ``gpu`` (unknown), ``model`` (excluded), ``profile`` (missing), ``start`` (illegal),
        ``overlap``, ``max_instances``, ``media`` (``+me``), ``compute``, ``cpu`` or ``ram_gb``.
    holder
        The instance that breaks the rule: the one checked alone, the later of two
        overlapping ones, or the last one counted towards a total.
    field
        ``gpu``, ``profile`` or ``start`` for a rule one instance breaks alone (the JSON field at
        fault under ``holder``), None for a rule of the GPU or host as a whole.
    scope
        ``GPU 'g1'`` or ``host 'h1'`` for a whole-GPU or whole-host rule, else empty.
    text
        The rule and the bad value, e.g. ``'big' overlaps 'run'``.
    holders
        Every instance the rule involves, in the order given.
    """

    rule: str
    holder: str
    field: str | None
    scope: str
    text: str
    holders: tuple[str, ...] = ()

    def message(self) -> str:
        """The verifier's one-line form: ``placements[3].start: ...`` or ``GPU 'g1': ...``."""
        if self.field is not None:
            return f"{self.holder}.{self.field}: {self.text}"
        return f"{self.scope}: {self.text}"


@dataclass(frozen=True, slots=True)
class StateCheck:
    """Breaches of a state, and the profile of every instance that passed its own checks."""

    breaches: tuple[Breach, ...]
    profiles: dict[str, Profile] = field(default_factory=dict)  # holder id -> profile

    @property
    def valid(self) -> bool:
        return not self.breaches


def check_state(instance: Instance, held: Iterable[Held]) -> StateCheck:
    """Check every rule of a state of ``instance`` (module docstring).

    Parameters
    ----------
    held
        The instances of the state, holder ids unique; workload ids must be workloads of
        ``instance``. An instance that breaks a rule alone (unknown GPU, excluded model,
        profile missing, illegal start) is left out of the GPU and host totals.

    Returns
    -------
    StateCheck
        Per-instance breaches in the order of ``held``, then overlaps, per-profile counts
        (by GPU and profile), ``+me`` (by GPU), compute slices (by GPU), host cpu and ram
        (hosts in instance order).
    """
    breaches: list[Breach] = []
    placed: list[tuple[str, str, str, int, Profile]] = []
    for item in held:
        holder, wid, gpu_id, start = item[:4]
        chosen = item[4] if len(item) > 4 else None
        if not instance.has_gpu(gpu_id):
            breaches.append(
                Breach("gpu", holder, "gpu", "", f"{gpu_id!r} is not a GPU of the instance", (holder,))
            )
            continue
        if not instance.gpu(gpu_id).layout_known:
            text = f"{gpu_id!r} has an unknown layout (its MIG devices were not read): nothing may be placed on it"
            breaches.append(Breach("gpu", holder, "gpu", "", text, (holder,)))
            continue
        w = instance.workload(wid)
        model = instance.gpu(gpu_id).model
        if w.gpu_models is not None and model.name not in w.gpu_models:
            text = f"{gpu_id!r} ({model.name}) is excluded: workload {w.id!r} allows only {', '.join(w.gpu_models)}"
            breaches.append(Breach("model", holder, "gpu", "", text, (holder,)))
            continue
        fitting = instance.profiles_on(w, model)
        if not fitting:
            text = (
                f"{w.profile!r} (workload {w.id!r}) is not a profile of {model.name}"
                if w.profile is not None
                else f"no profile of {model.name} fits workload {w.id!r} ({w.size})"
            )
            breaches.append(Breach("profile", holder, "gpu", "", text, (holder,)))
            continue
        if chosen is None:
            profile = instance.profile_on(w, model)
            assert profile is not None  # some profile fits, so there is a default
        else:
            found = model.find(chosen)
            if found is None or found not in fitting:
                may = ", ".join(p.name for p in fitting)
                what = (
                    "is not a profile of" if found is None else "does not fit workload " + repr(w.id) + " on"
                )
                text = f"{chosen!r} {what} {model.name} ({w.size}: {may})"
                breaches.append(Breach("profile", holder, "profile", "", text, (holder,)))
                continue
            profile = found
            default = instance.profile_on(w, model)
            if w.running and w.placement is not None and default is not None and profile != default:
                # destroyed and created again at another size: a restart that no running workload
                # makes (the models, the planner and the emitters keep it: Instance.at_profiles)
                home = instance.gpu(w.placement.gpu).model.name == model.name
                text = (
                    f"running {w.id!r} runs at {default.name}: on {model.name} it keeps that profile, "
                    f"not {profile.name}"
                    if home
                    else f"running {w.id!r} moves to {model.name} at the smallest profile that fits, "
                    f"{default.name}, not {profile.name}"
                )
                breaches.append(Breach("profile", holder, "profile", "", text, (holder,)))
                continue
        if (start, profile.memory_slots) not in profile.placements:
            starts = ", ".join(str(s) for s, _ in profile.placements)
            text = f"{start} is not a legal start of {profile.name} on {model.name} ({starts})"
            breaches.append(Breach("start", holder, "start", "", text, (holder,)))
            continue
        placed.append((holder, wid, gpu_id, start, profile))

    owner: dict[str, dict[int, tuple[str, str]]] = defaultdict(dict)  # GPU -> slot -> (holder, workload)
    count: dict[tuple[str, str], list[str]] = defaultdict(list)  # (GPU, profile) -> holders
    media: dict[str, list[tuple[str, str]]] = defaultdict(list)  # GPU -> (holder, workload)
    compute: dict[str, int] = defaultdict(int)
    compute_holders: dict[str, list[str]] = defaultdict(list)
    cpu: dict[str, float] = defaultdict(float)
    ram: dict[str, float] = defaultdict(float)
    host_holders: dict[str, list[str]] = defaultdict(list)
    for holder, wid, gpu_id, start, profile in placed:
        slots = owner[gpu_id]
        span = range(start, start + profile.memory_slots)
        clash = sorted({slots[s] for s in span if s in slots}, key=lambda hw: (hw[1], hw[0]))
        for other_holder, other in clash:
            breaches.append(
                Breach(
                    "overlap",
                    holder,
                    None,
                    f"GPU {gpu_id!r}",
                    f"{wid!r} overlaps {other!r}",
                    (other_holder, holder),
                )
            )
        for s in span:
            slots.setdefault(s, (holder, wid))
        count[gpu_id, profile.name].append(holder)
        if profile.media_extension:
            media[gpu_id].append((holder, wid))
        compute[gpu_id] += profile.compute
        compute_holders[gpu_id].append(holder)
        w = instance.workload(wid)
        host = instance.gpu(gpu_id).host
        cpu[host] += w.cpu
        ram[host] += w.ram_gb
        host_holders[host].append(holder)
    for (gpu_id, name), holders in sorted(count.items()):
        limit = instance.gpu(gpu_id).model.profile(name).max_instances
        if len(holders) > limit:
            text = f"{len(holders)} instances of {name}, at most {limit}"
            breaches.append(
                Breach("max_instances", holders[-1], None, f"GPU {gpu_id!r}", text, tuple(holders))
            )
    for gpu_id, pairs in sorted(media.items()):
        if len(pairs) > 1:
            text = f"{len(pairs)} +me instances ({', '.join(w for _, w in pairs)}), at most one per GPU"
            breaches.append(
                Breach("media", pairs[-1][0], None, f"GPU {gpu_id!r}", text, tuple(h for h, _ in pairs))
            )
    for gpu_id, slices in sorted(compute.items()):
        limit = instance.gpu(gpu_id).model.compute_slices
        if slices > limit:
            on_gpu = tuple(compute_holders[gpu_id])
            text = f"uses {slices} compute slices, has {limit}"
            breaches.append(Breach("compute", on_gpu[-1], None, f"GPU {gpu_id!r}", text, on_gpu))
    for h in instance.hosts:
        for what, used, cap in (("cpu", cpu[h.id], h.cpu), ("ram_gb", ram[h.id], h.ram_gb)):
            if cap is not None and used > cap + 1e-9:
                on_host = tuple(host_holders[h.id])
                text = f"{what} {used:g} > capacity {cap:g}"
                breaches.append(Breach(what, on_host[-1], None, f"host {h.id!r}", text, on_host))
    return StateCheck(tuple(breaches), {holder: profile for holder, _, _, _, profile in placed})
