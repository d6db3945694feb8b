"""``mipopt import``: every recorded output in ``../shared/interop`` imports or is refused with its reason.

The recorded files are read where they are kept. Outcomes were read off the files by hand: a GPU
listing with MIG devices needs the host's ``-lgi`` for the starts; a lone ``-lgi``, ``-lgip`` or
``-lgipp`` names no product; a mig-parted config holds no state; the shell-loop output and the
truncated XML are not what nvidia-smi prints. Directories and instances made here are hand-made.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import mipopt
from mipopt.cli import main

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "interop"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason="the recorded outputs are not in ../shared/interop"
)
RECORDED = sorted(p.name for p in SHARED.glob("*.txt")) if SHARED.is_dir() else []

NEEDS_LGI = "the output of `nvidia-smi mig -lgi` is needed for the starts"
NO_PRODUCT = "no file names the GPU's product; give --gpu-model"
#: file -> (line, reason) of the refusal of that file alone; files not here import.
REFUSED = {
    "A100-40GB__L__5.txt": (2, f"MIG device 1g.5gb on GPU 0 has no known start; {NEEDS_LGI}"),
    "A100-40GB__L__6.txt": (2, f"MIG device 3g.20gb on GPU 0 has no known start; {NEEDS_LGI}"),
    "A100-40GB__lgi__6.txt": (6, NO_PRODUCT),
    "A100-40GB__q-x__1.txt": (20, f"MIG device GI 1 on GPU 0 has no known start; {NEEDS_LGI}"),
    "A100-80GB__q-x__1.txt": (21, f"MIG device GI 3 on GPU 0 has no known start; {NEEDS_LGI}"),
    "A30__L__4.txt": (
        1,
        "expected 'GPU N: NAME (UUID: GPU-...)' or '  MIG PROFILE Device N: (UUID: MIG-...)', "
        "got 'NVIDIA_VISIBLE_DEVICES=3'",
    ),
    "A30__lgi__1.txt": (6, NO_PRODUCT),
    "A30__lgip__1.txt": (6, NO_PRODUCT),
    "A30__lgipp__1.txt": (1, NO_PRODUCT),
    "GB200__L__1.txt": (2, f"MIG device 1g.24gb on GPU 0 has no known start; {NEEDS_LGI}"),
    "GH200-480GB__L__1.txt": (2, f"MIG device 1g.24gb on GPU 0 has no known start; {NEEDS_LGI}"),
    "GH200-480GB__lgip__1.txt": (6, NO_PRODUCT),
    "GH200-96GB__L__1.txt": (2, f"MIG device 1g.12gb on GPU 0 has no known start; {NEEDS_LGI}"),
    "H100-80GB__L__2.txt": (2, f"MIG device 3g.40gb on GPU 0 has no known start; {NEEDS_LGI}"),
    "H100-80GB__L__3.txt": (2, f"MIG device 1g.10gb on GPU 0 has no known start; {NEEDS_LGI}"),
    "H100-80GB__L__4.txt": (2, f"MIG device 3g.40gb on GPU 0 has no known start; {NEEDS_LGI}"),
    "H100-80GB__lgi__1.txt": (6, NO_PRODUCT),
    "H100-80GB__lgip__1.txt": (6, NO_PRODUCT),
    "H100-80GB__lgipp__1.txt": (1, NO_PRODUCT),
    "H100-80GB__nvidia-smi__2.txt": (21, f"MIG device GI 8 on GPU 0 has no known start; {NEEDS_LGI}"),
    "H100-80GB__nvidia-smi__3.txt": (48, f"MIG device GI 2 on GPU 0 has no known start; {NEEDS_LGI}"),
    "H100-80GB__nvidia-smi__4.txt": (48, f"MIG device GI 1 on GPU 0 has no known start; {NEEDS_LGI}"),
    "H100-NVL-94GB__lgip__1.txt": (6, NO_PRODUCT),
    "H100-NVL-94GB__lgipp__1.txt": (1, NO_PRODUCT),
    "H100-NVL-94GB__nvidia-smi__1.txt": (20, f"MIG device GI 1 on GPU 0 has no known start; {NEEDS_LGI}"),
    "RTX-PRO-6000-Blackwell__L__1.txt": (3, f"MIG device 1g.24gb on GPU 0 has no known start; {NEEDS_LGI}"),
    "RTX-PRO-6000-Blackwell__lgi__1.txt": (6, NO_PRODUCT),
    "RTX-PRO-6000-Blackwell__lgi__2.txt": (6, NO_PRODUCT),
    "RTX-PRO-6000-Blackwell__lgip__1.txt": (6, NO_PRODUCT),
    "RTX-PRO-6000-Blackwell__lgipp__1.txt": (1, NO_PRODUCT),
    "RTX-PRO-6000-Blackwell__nvidia-smi__1.txt": (
        21,
        f"MIG device GI 6 on GPU 0 has no known start; {NEEDS_LGI}",
    ),
    "RTX-PRO-6000-Blackwell__nvidia-smi__2.txt": (
        25,
        f"MIG device GI 3 on GPU 2 has no known start; {NEEDS_LGI}",
    ),
    "RTX-PRO-6000-Blackwell__q-x__1.txt": (
        35,
        "expected well-formed nvidia-smi -q -x XML, got 'the end of the text (no element found)'",
    ),
}
NO_STATE = {  # refused without a line: the whole file is the reason
    "RTX-PRO-6000-Blackwell__lci__1.txt": (
        "n1: no GPUs in its files (-lci lists compute instances only): give -L, -q, -q -x, plain nvidia-smi or mig -lgi"
    ),
    **{
        name: f"{SHARED / name}: a mig-parted file has no GPUs or GPU instances to import"
        for name in RECORDED
        if "mig-parted-config" in name
    },
}
#: file -> (models of the GPUs, GPU instances, GPUs attached, the line of its MIG mode
#: Disabled) of the files that import alone: the -q excerpts print one GPU of several.
IMPORTED = {
    "A100-40GB__nvidia-smi__6.txt": (["A100-40GB"], 0, None, None),
    "A100-80GB__q__3.txt": (["A100-80GB"], 0, 4, 8),
    "H100-80GB__q__1.txt": (["H100-80GB"], 0, 8, 8),
    "H100-NVL-94GB__q__2.txt": (["H100-94GB"], 0, 2, 8),
}
NO_LISTING = "n1: no file lists its GPUs, so a GPU after GPU 0 is not seen (add the host's nvidia-smi -L)"


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@needs_shared
def test_every_recorded_file_is_accounted_for() -> None:
    assert set(RECORDED) == set(REFUSED) | set(NO_STATE) | set(IMPORTED)
    assert len(RECORDED) == 43


@needs_shared
@pytest.mark.parametrize("name", RECORDED)
def test_each_recorded_file_alone_imports_or_is_refused_with_its_reason(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "out.json"
    code, out, err = run(capsys, "import", "nvidia-smi", "--host", "n1", SHARED / name, "--out", out_file)
    if name in IMPORTED:
        models, running, attached, disabled = IMPORTED[name]
        notes = () if disabled is None else (
            f"n1: {SHARED / name} prints 1 of its {attached} attached GPUs: the others are not imported, and "
            "the printed are taken as GPU 0 (wrong for nvidia-smi -q -i N)",
            f"n1: GPU 0 has MIG mode Disabled ({SHARED / name}:{disabled}): imported empty; enable MIG on it "
            "(a GPU reset) before a plan creates instances there",
        )  # fmt: skip
        assert (code, err) == (0, "".join(f"note: {n}\n" for n in notes))
        inst = mipopt.load_instance(out_file)
        assert [g.model.name for g in inst.gpus] == models
        assert len(inst.workloads) == running and inst.notes == notes
        return
    assert code == 2 and out == ""
    if name in NO_STATE:
        assert err == f"mipopt: error: {NO_STATE[name]}\n"
    else:
        line, reason = REFUSED[name]
        assert err == f"mipopt: error: {SHARED / name}:{line}: {reason}\n"
    assert not out_file.exists()


@needs_shared
@pytest.mark.parametrize(
    ("name", "model", "running"),
    [
        ("A30__lgi__1.txt", "A30", 4),
        ("H100-80GB__lgi__1.txt", "H100-80GB", 4),
        ("RTX-PRO-6000-Blackwell__lgi__1.txt", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 3),
        ("A100-40GB__lgi__6.txt", "A100-SXM4-40GB", 7),
    ],
)
def test_a_lone_lgi_imports_with_gpu_model(
    name: str, model: str, running: int, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "import", "nvidia-smi", "--host", "n1", SHARED / name, "--gpu-model", model, "--json"
    )
    assert (code, err) == (0, f"note: {NO_LISTING}\n")
    data = json.loads(out)
    assert len(data["workloads"]) == running and data["notes"] == [NO_LISTING]
    assert all(w["placement"]["gpu_instance_id"] >= 0 for w in data["workloads"])


def _node_dirs(tmp_path: Path) -> tuple[Path, Path]:
    node1, node2 = tmp_path / "node1", tmp_path / "node2"
    node1.mkdir()
    node2.mkdir()
    for name in ("A100-40GB__L__5.txt", "A100-40GB__lgi__6.txt"):
        shutil.copy(SHARED / name, node1 / name)
    for name in (
        "H100-80GB__L__2.txt",
        "H100-80GB__lgi__1.txt",
        "H100-80GB__lgip__1.txt",
        "H100-80GB__lgipp__1.txt",
    ):
        shutil.copy(SHARED / name, node2 / name)
    return node1, node2


@needs_shared
def test_a_directory_per_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node1, node2 = _node_dirs(tmp_path)
    out_file = tmp_path / "cluster.json"
    code, out, err = run(
        capsys, "import", "nvidia-smi", node1, node2, "--cpu", 64, "--ram-gb", 512, "--out", out_file
    )
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "imported: 2 hosts, 2 GPUs, 11 running GPU instances, 0 new requests",
        "  node1: 1 x A100-40GB (cpu 64, ram_gb 512)",
        "    node1-gpu0: 1g.5gb@0 1g.5gb@1 1g.5gb@2 1g.5gb@3 1g.5gb@4 1g.5gb@5 1g.5gb@6",
        "  node2: 1 x H100-80GB (cpu 64, ram_gb 512)",
        "    node2-gpu0: 1g.10gb@0 1g.10gb@1 1g.10gb@2 3g.40gb@4",
        "",
        f"wrote {out_file}",
    ]
    inst = mipopt.load_instance(out_file)
    gpu = inst.gpu("node2-gpu0")
    assert (gpu.device_index, gpu.uuid) == (0, "GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02")
    assert inst.workload("node1-gpu0-gi7").placement == mipopt.instance.Placement("node1-gpu0", 0)


@needs_shared
def test_merge_keeps_requests_and_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node1, node2 = _node_dirs(tmp_path)
    first = tmp_path / "cluster.json"
    assert run(capsys, "import", "nvidia-smi", node1, node2, "--out", first)[0] == 0
    data = json.loads(first.read_text())
    data["workloads"][0]["id"] = "train"  # the operator names one running instance ...
    data["workloads"].append(
        {"id": "llm", "profile": "3g.40gb", "gpu_models": ["H100-80GB"]}
    )  # ... and adds a request
    data["hosts"].append({"id": "spare", "gpus": [{"id": "spare-g0", "model": "A100-80GB"}]})
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    merged_file = tmp_path / "merged.json"
    code, _, err = run(capsys, "import", "nvidia-smi", node1, "--merge", edited, "--out", merged_file)
    assert code == 0
    assert err == "note: train: kept its id; the import calls it node1-gpu0-gi7\n"
    merged = mipopt.load_instance(merged_file)
    assert [h.id for h in merged.hosts] == ["node1", "node2", "spare"]
    assert "llm" in {w.id for w in merged.new}
    train = merged.workload("train")
    assert train.placement is not None and (train.placement.start, train.placement.gpu_instance_id) == (0, 7)


@needs_shared
def test_out_onto_an_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node1, _ = _node_dirs(tmp_path)
    target = node1 / "A100-40GB__L__5.txt"
    before = target.read_text()
    code, out, err = run(capsys, "import", "nvidia-smi", "--host", "n1", target, "--out", target)
    assert (code, out) == (2, "")
    assert err == f"mipopt: error: --out: {target} is an input; write the result to another file\n"
    code, _, err = run(capsys, "import", "nvidia-smi", node1, "--out", node1 / "x.json")
    assert (
        err
        == f"mipopt: error: --out: {node1 / 'x.json'} is in the input directory {node1}; write it elsewhere\n"
    )
    assert target.read_text() == before and not (node1 / "x.json").exists()


def test_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(capsys, "import", "nvidia-smi")[2]
        == "mipopt: error: give a directory per host or --host NAME FILE...\n"
    )
    assert run(capsys, "import", "nvidia-smi", "--host", "n1")[2] == (
        "mipopt: error: --host: give a name and at least one file, got only 'n1'\n"
    )
    missing = tmp_path / "missing.txt"
    assert run(capsys, "import", "nvidia-smi", "--host", "n1", missing)[2] == (
        f"mipopt: error: {missing}: cannot be read: No such file or directory\n"
    )


def test_a_hand_made_broken_lgi_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lgi = tmp_path / "lgi.txt"  # hand-made: a row whose instance id is not a number
    lgi.write_text(
        "+----------------------------------------------------+\n"
        "| GPU instances:                                     |\n"
        "| GPU   Name          Profile  Instance   Placement  |\n"
        "|                       ID       ID       Start:Size |\n"
        "|====================================================|\n"
        "|   0  MIG 3g.20gb       9        x          4:4     |\n"
        "+----------------------------------------------------+\n"
    )
    code, out, err = run(capsys, "import", "nvidia-smi", "--host", "n1", lgi, "--gpu-model", "A100-40GB")
    assert (code, out) == (2, "")
    assert err.startswith(f"mipopt: error: {lgi}:6: expected ") and err.count("\n") == 1


GUIDE = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi"
GUIDE_FILES = [
    GUIDE / f"mig-user-guide_A100-40GB_{kind}.txt" for kind in ("L", "lgi", "nvidia-smi-created")
]  # one A100-40GB: 3g.20gb at 4 (GI 1) and at 0 (GI 2), no process


def test_kubernetes_then_nvidia_smi_merge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A MIG node's GPUs are of unknown layout until its nvidia-smi is merged; the notes follow."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "kubernetes"
    k8s = tmp_path / "k8s.json"
    code, out, err = run(
        capsys, "import", "kubernetes", "--nodes", fixtures / "handmade_nodes.json",
        "--pods", fixtures / "handmade_pods.json", "--out", k8s,
    )  # fmt: skip
    assert code == 0
    assert out.splitlines()[:4] == [
        "imported: 1 host, 2 GPUs, 0 running GPU instances, 5 new requests",
        "  gpu-a: 2 x A100-40GB (cpu 54.25, ram_gb 486.877)",
        "    gpu-a-gpu0: layout unknown",
        "    gpu-a-gpu1: layout unknown",
    ]
    inst = mipopt.load_instance(k8s)
    assert inst.unknown_layout == ("gpu-a-gpu0", "gpu-a-gpu1")
    assert err == "".join(f"note: {n}\n" for n in inst.notes)
    assert inst.notes[1].startswith("node gpu-a: 2 GPU(s) of unknown layout: MIG devices 4 1g.5gb, ")
    assert inst.notes[-1] == "pod ml/bound: holds 2 1g.5gb on node gpu-a; which GPU and start is not known"

    code, out, _ = run(capsys, "show", k8s)
    assert code == 0
    assert out.splitlines()[3:5] == ["layout unknown, nothing placed there: gpu-a-gpu0, gpu-a-gpu1", "notes:"]
    assert out.splitlines()[5:] == [f"  {n}" for n in inst.notes]
    code, out, _ = run(capsys, "solve", k8s, "--method", "ff")
    assert code == 0 and "accepted 0/5" in out
    assert "layout unknown, nothing placed there: gpu-a-gpu0, gpu-a-gpu1" in out.splitlines()

    cluster = tmp_path / "cluster.json"
    code, out, err = run(
        capsys, "import", "nvidia-smi", "--host", "gpu-a", *GUIDE_FILES, "--merge", k8s, "--out", cluster
    )
    assert code == 0
    assert out.splitlines()[:4] == [
        "imported: 1 host, 2 GPUs, 0 running GPU instances, 5 new requests, 2 idle GPU instances",
        "  gpu-a: 2 x A100-40GB (cpu 54.25, ram_gb 486.877)",
        "    gpu-a-gpu0: 3g.20gb@0 (idle) 3g.20gb@4 (idle)",
        "    gpu-a-gpu1: layout unknown",
    ]
    merged = mipopt.load_instance(cluster)
    import_notes = (
        "gpu-a: GPU 0 GI 1 (3g.20gb), GPU 0 GI 2 (3g.20gb) imported idle: no process runs in them by "
        f"{GUIDE_FILES[2]}:14 (a process table printed in a container shows only the container's processes)",
        "gpu-a: gpu-a-gpu1 not in the import; kept with an unknown layout (import the host's nvidia-smi -L "
        "with its -lgi, or remove them)",
    )
    assert err == "".join(f"note: {n}\n" for n in import_notes)
    kept = tuple(n for n in inst.notes if not n.startswith("node gpu-a: "))
    assert merged.notes == kept + import_notes and len(kept) == len(inst.notes) - 1
    assert merged.unknown_layout == ("gpu-a-gpu1",)
    assert [(i.gpu, i.start, i.gpu_instance_id) for i in merged.idle] == [
        ("gpu-a-gpu0", 4, 1),
        ("gpu-a-gpu0", 0, 2),
    ]
    solution = tmp_path / "sol.json"
    assert run(capsys, "solve", cluster, "--method", "ff", "--out", solution)[0] == 0
    placed = mipopt.load_solution(solution).placed()
    assert placed and {gpu for gpu, _ in placed.values()} == {"gpu-a-gpu0"}


def test_host_names_carrying_payloads_are_refused_as_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "import", "nvidia-smi", "--host", "x\ntouch pwned", *GUIDE_FILES)
    assert (code, out) == (2, "")
    assert err == (
        "mipopt: error: --host: a host name must be one line of printable characters: 'x\\ntouch pwned' "
        "has '\\n' at 1\n"
    )
    code, out, err = run(capsys, "import", "nvidia-smi", "--host=-oProxyCommand=sh", *GUIDE_FILES)
    assert (code, out) == (2, "")
    assert err == "mipopt: error: --host: a host name must not start with '-': '-oProxyCommand=sh'\n"
    node = tmp_path / "\x1b[2Jnode"
    node.mkdir()
    code, out, err = run(capsys, "import", "nvidia-smi", node)
    assert (code, out) == (2, "") and "\x1b" not in err
    assert err == (
        f"mipopt: error: {str(node)!r}: the directory's name is its host's, and a host name must be one line of "
        "printable characters: '\\x1b[2Jnode' has '\\x1b' at 0\n"
    )


def test_a_bad_instance_name_is_named_as_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "import", "nvidia-smi", "--host", "n1", *GUIDE_FILES, "--name=-x")
    assert (code, out) == (2, "")
    assert err == "mipopt: error: --name: must not start with '-': '-x'\n"


def test_plan_refuses_to_write_onto_its_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    instance = Path(__file__).resolve().parents[2] / "instances" / "swap.json"
    target = tmp_path / "target.json"
    target.write_text((instance.parent / "swap.target.json").read_text())
    before = target.read_text()
    code, out, err = run(capsys, "plan", instance, target, "--emit", "json", "--emit-file", target)
    assert (code, out) == (2, "")
    assert err == f"mipopt: error: --emit-file: {target} is an input; write the result to another file\n"
    assert target.read_text() == before


def test_a_node_name_carrying_a_payload_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The GPU Operator docs' H100 labels in a Node named with an escape sequence and a newline."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "kubernetes"
    labels = json.loads((fixtures / "gpu-operator-docs_H100-mixed-all-balanced_labels.json").read_text())
    nodes = tmp_path / "nodes.json"
    node = {
        "kind": "Node",
        "metadata": {"name": "\x1b[2J\ntouch pwned", "labels": labels},
        "status": {"allocatable": {}},
    }
    nodes.write_text(json.dumps(node))
    code, out, err = run(capsys, "import", "kubernetes", "--nodes", nodes)
    assert (code, out) == (2, "")
    assert err == (
        f"mipopt: error: {nodes}: metadata.name: a node name must be one line of printable characters: "
        "'\\x1b[2J\\ntouch pwned' has '\\x1b' at 0\n"
    )
