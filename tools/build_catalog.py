"""Build ``mipopt/catalog/gpu_models.json`` from the shared MIG facts.

Usage: ``python tools/build_catalog.py [PATH/TO/mig_profiles.json]``
(default ``../shared/mig/mig_profiles.json``).

The shipped catalog keeps the model ids, profile names, NVML profile ids, compute
slices, memory slots, memory and placements of the source unchanged. It adds what
mipopt needs and the source states only in prose (``../shared/mig/README.md``):

* ``placement_status``: ``confirmed`` where the legal placements were read off real
  ``nvidia-smi mig -lgipp`` output (README section 2 and 8), ``inferred`` otherwise;
* ``aliases``: profile names other drivers print for the same profile (README section 7.6);
* ``gpu_slices``: the memory slots of each compute slice (the last compute slice of an
  8-slot part owns two memory slots; README section 0 and the WPM paper, section 3.2.3).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mipopt.catalog import default_gpu_slices  # noqa: E402

OUT = ROOT / "mipopt" / "catalog" / "gpu_models.json"

# Models whose placements come from a real -lgipp transcript (README sections 2.1-2.5, 2.9).
CONFIRMED_PLACEMENTS = {
    "A30-24GB",
    "A100-40GB",
    "H100-80GB",
    "H100-94GB",
    "RTX-PRO-6000-Blackwell-96GB",
}

# Names printed by other drivers or boards for the same profile (README section 7.6).
ALIASES = {
    ("A100-80GB", "3g.40gb"): ["3g.39gb"],
    ("GB200-186GB", "1g.23gb"): ["1g.24gb"],
    ("GB200-186GB", "1g.23gb+me"): ["1g.24gb+me"],
    ("H100-94GB", "1g.12gb"): ["1g.11gb"],
    ("H100-94GB", "2g.24gb"): ["2g.22gb"],
    ("H100-94GB", "3g.47gb"): ["3g.44gb"],
}


def build(source: Path) -> dict:
    data = json.loads(source.read_text())
    models = []
    for model, gpu in data["gpus"].items():
        status = "confirmed" if model in CONFIRMED_PLACEMENTS else "inferred"
        profiles = []
        for p in gpu["profiles"]:
            profiles.append(
                {
                    "name": p["name"],
                    "id": p["id"],
                    "compute": p["compute"],
                    "memory_slots": p["memory_slices"],
                    "memory_gb": p["memory_gb"],
                    "max_instances": p["max_instances"],
                    "placements": p["placements"],
                    "placement_status": status,
                    "aliases": ALIASES.get((model, p["name"]), []),
                    "source_note": p["status"],
                }
            )
        models.append(
            {
                "model": model,
                "slots": gpu["slots"],
                "compute_slices": gpu["compute_slices"],
                "memory_gb": gpu["memory_gb"],
                "gpu_slices": [
                    list(g) for g in default_gpu_slices(gpu["slots"], gpu["compute_slices"]) or ()
                ],
                "variants": gpu.get("variants", [gpu["pci_device_id"]] if "pci_device_id" in gpu else []),
                "source_note": gpu.get("placements_status") or gpu.get("slots_note") or "",
                "profiles": profiles,
            }
        )
    return {
        "format": "mipopt-catalog",
        "version": 1,
        "built_from": "shared/mig/mig_profiles.json (see shared/mig/README.md for sources)",
        "models": models,
    }


def compact_json(obj: object) -> str:
    """Indented JSON with lists of scalars kept on one line, so a diff reads per profile."""
    text = json.dumps(obj, indent=1)
    flat = re.compile(r"\[[^\[\]{}]*\]")
    return flat.sub(lambda m: json.dumps(json.loads(m.group(0))), text)


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else ROOT.parent / "shared" / "mig" / "mig_profiles.json"
    OUT.write_text(compact_json(build(source)) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
