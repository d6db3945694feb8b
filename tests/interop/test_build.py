"""Building instances from the recorded outputs of ``../shared/interop/`` and from broken texts.

The recorded files are read from where they are kept (never copied here); the GPUs, profiles
and starts asserted below were read off the files by hand. Files are paired only where
``SOURCES.md`` says they come from the same machine and state. Texts written in this file are
hand-made, for error paths only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import mipopt
from mipopt.errors import InstanceError
from mipopt.interop import instance_from_nvidia_smi

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "interop"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason="the recorded outputs are not in ../shared/interop"
)


def _running(instance: mipopt.Instance) -> list[tuple[str, str, str, int]]:
    out = []
    for w in instance.workloads:
        assert w.placement is not None
        out.append((w.id, str(w.profile), w.placement.gpu, w.placement.start))
    return sorted(out)


def _build(files: list[str], **kwargs: object) -> mipopt.Instance:
    return instance_from_nvidia_smi({"n1": [SHARED / f for f in files]}, **kwargs)  # type: ignore[arg-type]


@needs_shared
def test_a100_40gb_list_and_lgi_of_one_machine() -> None:
    # -L__5 (R450 UUIDs .../7/0 .. .../13/0) and -lgi__6 (GI 7..13) show one state: all-1g.5gb.
    inst = _build(["A100-40GB__L__5.txt", "A100-40GB__lgi__6.txt"], cpu=32, ram_gb=256)
    assert [(g.id, g.model.name) for g in inst.gpus] == [("n1-gpu0", "A100-40GB")]
    assert [(h.id, h.cpu, h.ram_gb) for h in inst.hosts] == [("n1", 32, 256)]
    assert _running(inst) == sorted((f"n1-gpu0-gi{7 + s}", "1g.5gb", "n1-gpu0", s) for s in range(7))


@needs_shared
def test_a100_40gb_list_of_another_state_is_refused() -> None:
    # -L__6 shows GI 2 (3g.20gb), 3 (2g.10gb), 9 (1g.5gb): not the all-1g.5gb state of -lgi__6.
    with pytest.raises(InstanceError) as err:
        _build(["A100-40GB__L__6.txt", "A100-40GB__lgi__6.txt"])
    assert str(err.value) == (
        f"{SHARED / 'A100-40GB__L__6.txt'}:2: GPU instance 2 on GPU 0 is not in the -lgi output "
        "(instances [7, 8, 9, 10, 11, 12, 13]): the files show different states"
    )


@needs_shared
@pytest.mark.parametrize("listing", ["H100-80GB__L__2.txt", "H100-80GB__nvidia-smi__2.txt"])
def test_h100_pcie_list_and_lgi_of_one_machine(listing: str) -> None:
    # the scaleway page: `mig -cgi 9,19,19,19 -C` on an `NVIDIA H100 PCIe`
    inst = _build([listing, "H100-80GB__lgi__1.txt"])
    assert [(g.id, g.model.name) for g in inst.gpus] == [("n1-gpu0", "H100-80GB")]
    assert _running(inst) == [
        ("n1-gpu0-gi2", "3g.40gb", "n1-gpu0", 4),
        ("n1-gpu0-gi7", "1g.10gb", "n1-gpu0", 0),
        ("n1-gpu0-gi8", "1g.10gb", "n1-gpu0", 1),
        ("n1-gpu0-gi9", "1g.10gb", "n1-gpu0", 2),
    ]


@needs_shared
def test_lone_a30_lgi_with_gpu_model() -> None:
    inst = _build(["A30__lgi__1.txt"], gpu_model="A30-24GB")
    assert [(g.id, g.model.name) for g in inst.gpus] == [("n1-gpu0", "A30-24GB")]
    assert _running(inst) == [(f"n1-gpu0-gi{3 + s}", "1g.6gb", "n1-gpu0", s) for s in range(4)]


@needs_shared
def test_lone_lgi_without_gpu_model_is_refused() -> None:
    with pytest.raises(InstanceError) as err:
        _build(["A30__lgi__1.txt"])
    assert (
        str(err.value) == f"{SHARED / 'A30__lgi__1.txt'}:6: no file names the GPU's product; give gpu_model"
    )


@needs_shared
def test_rtx_pro_6000_lgi_mixed_and_uniform() -> None:
    product = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    mixed = _build(["RTX-PRO-6000-Blackwell__lgi__1.txt"], gpu_model=product)
    assert [g.model.name for g in mixed.gpus] == ["RTX-PRO-6000-Blackwell-96GB"]
    assert _running(mixed) == [
        ("n1-gpu0-gi1", "2g.48gb", "n1-gpu0", 0),
        ("n1-gpu0-gi5", "1g.24gb", "n1-gpu0", 6),
        ("n1-gpu0-gi6", "1g.24gb", "n1-gpu0", 9),
    ]
    uniform = _build(["RTX-PRO-6000-Blackwell__lgi__2.txt"], gpu_model=product)
    assert _running(uniform) == [(f"n1-gpu0-gi{3 + i}", "1g.24gb", "n1-gpu0", 3 * i) for i in range(4)]


@needs_shared
def test_rtx_pro_6000_list_of_eight_gpus_with_lgi_of_gpu0_needs_more_lgi() -> None:
    # -L lists 4 MIG devices on each of 8 GPUs; `mig -i 0 -lgi` places only GPU 0's.
    with pytest.raises(InstanceError) as err:
        _build(["RTX-PRO-6000-Blackwell__L__1.txt", "RTX-PRO-6000-Blackwell__lgi__2.txt"])
    assert str(err.value) == (
        f"{SHARED / 'RTX-PRO-6000-Blackwell__L__1.txt'}:8: MIG device 1g.24gb on GPU 1 has no known "
        "start; the output of `nvidia-smi mig -lgi` is needed for the starts"
    )


@needs_shared
def test_list_alone_does_not_invent_starts() -> None:
    with pytest.raises(
        InstanceError, match=r"H100-80GB__L__2\.txt:2: MIG device 3g\.40gb on GPU 0 has no known start"
    ):
        _build(["H100-80GB__L__2.txt"])


# -- hand-made texts, error paths only --------------------------------------------------------

HAND_LGI = """\
+----------------------------------------------------+
| GPU instances:                                     |
| GPU   Name          Profile  Instance   Placement  |
|                       ID       ID       Start:Size |
|====================================================|
|   {gpu}  MIG 3g.20gb       {pid}        2          {start}:4     |
+----------------------------------------------------+
"""
HAND_L = "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"


def _hand(tmp_path: Path, **texts: str) -> dict[str, list[str | Path]]:
    paths: list[str | Path] = []
    for name, text in texts.items():
        path = tmp_path / f"{name}.txt"
        path.write_text(text)
        paths.append(path)
    return {"n1": paths}


def test_hand_made_unknown_profile_id(tmp_path: Path) -> None:
    hosts = _hand(tmp_path, lgi=HAND_LGI.format(gpu=0, pid=99, start=4))
    with pytest.raises(InstanceError) as err:
        instance_from_nvidia_smi(hosts, gpu_model="A100-40GB")
    assert str(err.value) == f"{tmp_path / 'lgi.txt'}:6: profile id 99 is not a profile of A100-40GB"


def test_hand_made_lgi_gpu_not_listed(tmp_path: Path) -> None:
    hosts = _hand(tmp_path, L=HAND_L, lgi=HAND_LGI.format(gpu=1, pid=9, start=4))
    with pytest.raises(InstanceError) as err:
        instance_from_nvidia_smi(hosts)
    assert str(err.value) == f"{tmp_path / 'lgi.txt'}:6: GPU 1 is not among the listed GPUs [0]"


def test_hand_made_list_and_lgi_build(tmp_path: Path) -> None:
    hosts = _hand(tmp_path, L=HAND_L, lgi=HAND_LGI.format(gpu=0, pid=9, start=4))
    inst = instance_from_nvidia_smi(hosts, name="hand")
    assert inst.name == "hand"
    assert _running(inst) == [("n1-gpu0-gi2", "3g.20gb", "n1-gpu0", 4)]


def test_hand_made_illegal_start_is_refused_by_validation(tmp_path: Path) -> None:
    # 3g.20gb may start at 0 or 4 on an A100-40GB; 2 is not a legal start
    hosts = _hand(tmp_path, lgi=HAND_LGI.format(gpu=0, pid=9, start=2))
    with pytest.raises(InstanceError) as err:
        instance_from_nvidia_smi(hosts, gpu_model="A100-40GB")
    assert (
        str(err.value)
        == "workloads[0].placement.start: 2 is not a legal start of 3g.20gb on A100-40GB (0, 4)"
    )


def test_hand_made_unknown_product(tmp_path: Path) -> None:
    hosts = _hand(tmp_path, L="GPU 0: NVIDIA Quadro Imaginary (UUID: GPU-1)\n")
    with pytest.raises(InstanceError, match=r"L\.txt:1: "):
        instance_from_nvidia_smi(hosts)


def test_hand_made_unreadable_text(tmp_path: Path) -> None:
    hosts = _hand(tmp_path, junk="hello\n")
    with pytest.raises(InstanceError, match=r"junk\.txt:1: expected the output of nvidia-smi"):
        instance_from_nvidia_smi(hosts)
