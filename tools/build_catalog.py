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
  8-slot part owns two memory slots; README section 0 and the WPM paper, section 3.2.3);
* ``products``: the product names and PCI device ids nvidia-smi and NVML print, each with
  where it is attested (``PRODUCTS`` below; recorded outputs in ``../shared/interop``);
* corrections found against real outputs (issue 14): ``PROFILE_NOTES`` and the GB200 aliases.
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
    # early-driver names, still listed by NVIDIA's shipped mig-parted config-default.yaml
    # (all-3g.95gb, all-4g.95gb, all-7g.189gb beside the GB200 HGX all-3g.93gb, all-4g.93gb)
    ("GB200-186GB", "3g.93gb"): ["3g.95gb"],
    ("GB200-186GB", "4g.93gb"): ["4g.95gb"],
    ("GB200-186GB", "7g.186gb"): ["7g.189gb"],
    ("H100-94GB", "1g.12gb"): ["1g.11gb"],
    ("H100-94GB", "2g.24gb"): ["2g.22gb"],
    ("H100-94GB", "3g.47gb"): ["3g.44gb"],
}

# Per-profile source notes that replace the source's model-wide prose where a real output
# says more (issue 14, section 4). Placements stay as the source has them.
_GH200_LGIP = (
    "confirmed by real -lgip on an NVIDIA GH200 480GB (H100 96GB): ID {id}, {count} instances "
    "(kf-cuanschutz/NVIDIA_Grace_Hopper_benchmarking_logs_, shared/interop/GH200-480GB__lgip__1.txt); "
    "placements inferred (8-slot layout, no real -lgipp)"
)
PROFILE_NOTES = {
    ("H100-96GB", "1g.12gb"): _GH200_LGIP.format(id=19, count="7/7"),
    ("H100-96GB", "1g.12gb+me"): _GH200_LGIP.format(id=20, count="1/1"),
}

# Product names (as nvidia-smi -L / -q and NVML print them) and PCI device ids, by catalog
# model. Only names and ids with a source are listed; "attested" says where. Names are written
# with the "NVIDIA " prefix today's drivers print; the catalog's lookup drops it, so the
# R450 spelling recorded in interop ("A100-SXM4-40GB") matches too.
# interop = ../shared/interop (recorded outputs, SOURCES.md); mig = ../shared/mig/README.md;
# mig-parted = NVIDIA's deployments/systemd/config-default.yaml (interop/multi__mig-parted-config__2.txt),
# whose device-filter lists name the PCI ids per model in comments;
# MIG guide = NVIDIA MIG User Guide, "Supported GPUs".
PRODUCTS: list[dict[str, object]] = [
    {
        "model": "A30-24GB",
        "names": ["NVIDIA A30"],
        "pci_device_ids": ["0x20B710DE"],
        "attested": "name: interop A30__L__4; id: mig 2.1, mig-parted (A30-24GB)",
    },
    {
        "model": "A100-40GB",
        "names": ["NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"],
        "pci_device_ids": ["0x20B010DE", "0x20F110DE"],
        "attested": "names: interop A100-40GB__q-x__1 (with pci_device_id 20B010DE), "
        "A100-40GB__L__5/6 and __nvidia-smi__6 (R450 prints no 'NVIDIA '); A100-PCIE-40GB and its id: "
        "mig 2.2; ids: mig-parted (A100-40GB)",
    },
    {
        "model": "A100-80GB",
        "names": ["NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-80GB"],
        "pci_device_ids": ["0x20B210DE", "0x20B510DE"],
        "attested": "NVIDIA A100-SXM4-80GB: interop A100-80GB__q-x__1 (with pci_device_id 20B210DE), "
        "A100-80GB__q__3; NVIDIA A100 80GB PCIe: nvidia-smi -L in NVIDIA/go-dcgm#30; A100-PCIE-80GB "
        "and the ids: mig 2.3, mig-parted (A100-80GB)",
    },
    {
        "model": "H100-80GB",
        "names": ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"],
        "pci_device_ids": ["0x233010DE", "0x233110DE"],
        "attested": "NVIDIA H100 80GB HBM3: interop H100-80GB__q__1, __L__3/4, __nvidia-smi__3/4; "
        "NVIDIA H100 PCIe: interop H100-80GB__L__2, __nvidia-smi__2 (80GB per SOURCES.md); "
        "ids: mig 2.4 (SXM5 0x2330, PCIe 0x2331), mig-parted (H100-80GB)",
    },
    {
        "model": "H100-94GB",
        "names": ["NVIDIA H100 NVL"],
        "pci_device_ids": ["0x232110DE"],
        "attested": "name: interop H100-NVL-94GB__q__2, __nvidia-smi__1 (whose MIG devices are "
        "3g.47gb, 1g.24gb, 1g.12gb); id: mig 2.5, mig-parted (H100 NVL)",
    },
    {
        "model": "H100-96GB",
        "names": ["NVIDIA GH200 480GB", "NVIDIA GH200 96GB HBM3"],
        "pci_device_ids": ["0x234210DE", "0x233D10DE", "0x232910DE"],
        "attested": "NVIDIA GH200 480GB: interop GH200-480GB__L__1, same host's -lgip has 1g.12gb..7g.96gb; "
        "NVIDIA GH200 96GB HBM3: interop GH200-96GB__L__1 (7x 1g.12gb each); ids: mig 2.6 and "
        "mig-parted (H100-96GB, GH200, H20; 0x20B6 PG506-96GB left out: not in the MIG guide)",
    },
    {
        "model": "H200-141GB",
        "names": ["NVIDIA H200", "NVIDIA H200 NVL"],
        "pci_device_ids": ["0x233510DE", "0x233B10DE"],
        "attested": "ids: mig 2.7 (SXM 0x2335, NVL 0x233B), mig-parted (H200 141GB, H200 NVL); names: "
        "the products of the MIG guide (H200-SXM5, H200 NVL) and NVIDIA/mig-parted#120, #146; "
        "no recorded output prints them",
    },
    {
        "model": "GH200-144GB",
        "names": ["NVIDIA GH200 144G HBM3e"],
        "pci_device_ids": ["0x234810DE"],
        "attested": "id and name: mig 2.8, mig-parted (GH200 144G HBM3e), NVIDIA/mig-parted#139; "
        "no recorded output prints the name",
    },
    {
        "model": "B200-180GB",
        "names": ["NVIDIA B200"],
        "pci_device_ids": ["0x290110DE"],
        "attested": "name: nvidia-smi in NVIDIA/gpu-operator#2155; id: mig 2.8, mig-parted (B200)",
    },
    {
        "model": "GB200-186GB",
        "names": ["NVIDIA GB200"],
        "pci_device_ids": ["0x294110DE"],
        "attested": "name: interop GB200__L__1; id: mig 2.8, mig-parted (GB200 HGX)",
    },
    {
        "model": "RTX-PRO-6000-Blackwell-96GB",
        "names": [
            "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        ],
        "pci_device_ids": ["0x2BB510DE"],
        "attested": "Server Edition: interop RTX-PRO-6000-Blackwell__L__1 (the host whose -lgipp is the "
        "catalog's source); its id 0x2BB5 is the only RTX PRO 6000 id in mig-parted; Workstation and "
        "Max-Q Workstation Editions: MIG guide supported GPUs (96GB, 4 instances), the Max-Q name as "
        "printed in interop RTX-PRO-6000-Blackwell__q-x__1 (MIG mode N/A on 590.44.01); their PCI ids "
        "are not attested here",
    },
]


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
                    "source_note": PROFILE_NOTES.get((model, p["name"]), p["status"]),
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
        "products": PRODUCTS,
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
