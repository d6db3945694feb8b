"""``mipopt info`` (GPU models, profiles, legal placements) and ``mipopt configs``."""

from __future__ import annotations

import argparse

from mipopt.catalog import builtin_models
from mipopt.cli.common import EXIT_OK, gpu_model, print_json


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("info", help="GPU models, profiles and legal placements")
    p.add_argument(
        "model",
        nargs="?",
        help='a model id (A100-40GB), a product name as nvidia-smi prints it ("NVIDIA A100-SXM4-40GB") '
        "or a PCI device id (0x20B010DE) (default: list the models)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)

    p = sub.add_parser("configs", help="configuration statistics of one GPU (GRMU section 5.1)")
    p.add_argument("--gpu", required=True, metavar="MODEL", help="a model id, e.g. A100-40GB")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_configs)


def run(args: argparse.Namespace) -> int:
    if args.model is None:
        models = builtin_models()
        if args.json:
            print_json([m.to_dict() for m in models.values()])
            return EXIT_OK
        print(f"{'model':<30} {'slots':>5} {'compute':>7} {'memory_gb':>9} {'profiles':>8}  placements")
        for m in models.values():
            status = sorted({p.placement_status for p in m.profiles})
            print(
                f"{m.name:<30} {m.slots:>5} {m.compute_slices:>7} {m.memory_gb:>9g} {len(m.profiles):>8}  {'/'.join(status)}"
            )
        print("\n`mipopt info MODEL` shows a model's profiles and legal placements.")
        return EXIT_OK
    m = gpu_model(args.model)
    if args.json:
        print_json(m.to_dict())
        return EXIT_OK
    print(f"{m.name}: {m.slots} memory slots, {m.compute_slices} compute slices, {m.memory_gb:g} GB")
    print(
        f"\n{'profile':<16} {'id':>3} {'compute':>7} {'slots':>5} {'memory_gb':>9} {'max':>4}  {'status':<10} -lgipp"
    )
    for p in m.profiles:
        alias = f"  (also {', '.join(p.aliases)})" if p.aliases else ""
        print(
            f"{p.name:<16} {p.id:>3} {p.compute:>7} {p.memory_slots:>5} {p.memory_gb:>9g} {p.max_instances:>4}"
            f"  {p.placement_status:<10} {_placements_text(list(p.placements))}{alias}"
        )
    w = 4
    print(
        f"\nlegal placements, one column per memory slot:\n{'':<16} "
        + "".join(str(s).ljust(w) for s in range(m.slots))
    )
    for p in m.profiles:
        if not p.base:
            continue
        line = [" "] * (m.slots * w)
        for start, size in p.placements:
            seg = f"[{start}".ljust(size * w - 1, "=") + "]"
            line[start * w : start * w + len(seg)] = seg
        print(f"{p.name:<16} " + "".join(line).rstrip())
    media = [p.name for p in m.profiles if p.media_extension]
    if media:
        print(f"\n+me profiles ({', '.join(media)}) share one media-engine set: at most one per GPU.")
    return EXIT_OK


def _placements_text(profile_placements: list[tuple[int, int]]) -> str:
    starts = ",".join(str(s) for s, _ in profile_placements)
    return f"{{{starts}}}:{profile_placements[0][1]}"


def run_configs(args: argparse.Namespace) -> int:
    from mipopt.geometry.configs import config_stats

    stats = config_stats(gpu_model(args.gpu))
    if args.json:
        print_json(stats.to_dict())
        return EXIT_OK
    print(f"{stats.model}: configurations of one GPU over {', '.join(stats.profiles)}")
    rows = [
        ("configurations (including empty)", stats.configurations),
        ("terminal (nothing more fits)", stats.terminal),
        ("suboptimal (lower CC than the best arrangement)", stats.suboptimal),
        ("distinct multisets of instances", stats.multisets),
        ("reached by sequential default placement", stats.default_reachable),
        ("  of which suboptimal", stats.default_reachable_suboptimal),
        ("beaten on a profile by a rearrangement, same or lower CC", stats.profile_alternatives),
        ("pairs of configurations on two GPUs", stats.gpu_pairs),
        ("  beaten on a profile by a pair with the same instances", stats.pair_profile_alternatives),
        ("maximal layouts of the profile families", stats.maximal_layouts),
        ("  before driver R510 (no 4g beside 3g)", stats.maximal_layouts_pre_r510),
    ]
    for label, value in rows:
        print(f"  {label:<58} {value:>7}")
    return EXIT_OK
