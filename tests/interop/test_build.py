"""Building instances from the recorded outputs of ``../shared/interop/`` and from broken texts.

The recorded files are read from where they are kept (never copied here); the GPUs, profiles
and starts asserted below were read off the files by hand. Files are paired only where
``SOURCES.md`` says they come from the same machine and state. Texts written in this file are
hand-made, for error paths only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mipopt
from mipopt.errors import InstanceError
from mipopt.instance import IdleInstance
from mipopt.interop import instance_from_nvidia_smi, merge_import

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


NOT_IN_LISTING = (
    "the files show different states (a listing printed in a container shows only the container's devices)"
)


@needs_shared
@pytest.mark.parametrize(
    ("files", "message"),
    [
        (  # -L__6 shows GI 2 (3g.20gb), 3 (2g.10gb), 9 (1g.5gb): not the all-1g.5gb state of -lgi__6
            ["A100-40GB__L__6.txt", "A100-40GB__lgi__6.txt"],
            "S/A100-40GB__L__6.txt:2: GPU instance 2 on GPU 0 is not in the -lgi output (S/A100-40GB__lgi__6.txt:6: "
            "GPU instances 7, 8, 9, 10, 11, 12, 13): the files show different states",
        ),
        (  # nvidia-smi__6 says "No MIG devices found"; lgi__6 is the A100 after all-1g.5gb was applied
            ["A100-40GB__nvidia-smi__6.txt", "A100-40GB__lgi__6.txt"],
            "S/A100-40GB__lgi__6.txt:6: GPU instance 7 (1g.5gb) on GPU 0 is not among the MIG devices "
            f"S/A100-40GB__nvidia-smi__6.txt:14 shows (none): {NOT_IN_LISTING}",
        ),
        (  # the scaleway page: nvidia-smi in a container that sees GI 8 only; -lgi on the host
            ["H100-80GB__nvidia-smi__2.txt", "H100-80GB__lgi__1.txt"],
            "S/H100-80GB__lgi__1.txt:6: GPU instance 7 (1g.10gb) on GPU 0 is not among the MIG devices "
            f"S/H100-80GB__nvidia-smi__2.txt:15 shows (GI 8): {NOT_IN_LISTING}",
        ),
    ],
)
def test_files_of_different_states_are_refused_naming_both(files: list[str], message: str) -> None:
    with pytest.raises(InstanceError) as err:
        _build(files)
    assert str(err.value) == message.replace("S/", f"{SHARED}/")  # S: the recorded files' folder


@needs_shared
def test_h100_pcie_list_and_lgi_of_one_machine() -> None:
    # the scaleway page: `mig -cgi 9,19,19,19 -C` on an `NVIDIA H100 PCIe`
    inst = _build(["H100-80GB__L__2.txt", "H100-80GB__lgi__1.txt"])
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
    assert [(g.id, g.model.name, g.layout_known) for g in inst.gpus] == [("n1-gpu0", "A30-24GB", True)]
    assert _running(inst) == [(f"n1-gpu0-gi{3 + s}", "1g.6gb", "n1-gpu0", s) for s in range(4)]
    assert inst.notes == (
        "n1: no file lists its GPUs, so a GPU after GPU 0 is not seen (add the host's nvidia-smi -L)",
    )


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


# -- the MIG user guide's A100: idle and running instances ----------------------------------

GUIDE = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi"
GUIDE_L = GUIDE / "mig-user-guide_A100-40GB_L.txt"
GUIDE_LGI = GUIDE / "mig-user-guide_A100-40GB_lgi.txt"
CREATED = GUIDE / "mig-user-guide_A100-40GB_nvidia-smi-created.txt"  # no process
RUNNING = GUIDE / "mig-user-guide_A100-40GB_nvidia-smi-blackscholes.txt"  # a process in each GI


def _guide(*files: Path, **kwargs: object) -> mipopt.Instance:
    return instance_from_nvidia_smi({"n1": list(files)}, **kwargs)  # type: ignore[arg-type]


def test_instances_no_process_uses_are_idle() -> None:
    inst = _guide(GUIDE_L, GUIDE_LGI, CREATED)
    assert [(g.id, g.model.name, g.uuid, g.layout_known) for g in inst.gpus] == [
        ("n1-gpu0", "A100-40GB", "GPU-e86cb44c-6756-fd30-cd4a-1e6da3caf9b0", True)
    ]
    assert inst.workloads == ()
    assert inst.idle == (
        IdleInstance("n1-gpu0", "3g.20gb", 4, 1),
        IdleInstance("n1-gpu0", "3g.20gb", 0, 2),
    )
    assert inst.notes == (
        "n1: GPU 0 GI 1 (3g.20gb), GPU 0 GI 2 (3g.20gb) imported idle: no process runs in them by "
        f"{CREATED}:14 (a process table printed in a container shows only the container's processes)",
    )


def test_instances_with_a_process_are_running() -> None:
    inst = _guide(GUIDE_L, GUIDE_LGI, RUNNING)
    assert _running(inst) == [
        ("n1-gpu0-gi1", "3g.20gb", "n1-gpu0", 4),
        ("n1-gpu0-gi2", "3g.20gb", "n1-gpu0", 0),
    ]
    assert inst.idle == () and inst.notes == ()


def test_without_a_process_table_instances_are_running() -> None:
    inst = _guide(GUIDE_L, GUIDE_LGI)
    assert [w.id for w in inst.running] == ["n1-gpu0-gi1", "n1-gpu0-gi2"] and inst.idle == ()


def test_a_lone_lgi_with_the_excerpt_notes_what_it_cannot_see() -> None:
    inst = _guide(GUIDE_LGI, CREATED, gpu_model="A100-40GB")
    assert len(inst.idle) == 2 and [g.layout_known for g in inst.gpus] == [True]
    assert inst.notes[0] == (
        "n1: no file lists its GPUs, so a GPU after GPU 0 is not seen (add the host's nvidia-smi -L)"
    )


# -- variants of the recorded outputs, made here: each must be refused at its line -------------


def _variant(tmp_path: Path, recorded: Path, old: str, new: str) -> Path:
    """``recorded`` with ``old`` replaced by ``new`` (once), written under ``tmp_path``."""
    text = recorded.read_text()
    assert text.count(old) == 1
    path = tmp_path / f"variant_{recorded.name}"
    path.write_text(text.replace(old, new))
    return path


GI1 = "|   0  MIG 3g.20gb       9        1          4:4     |"  # line 6 of GUIDE_LGI
GI2 = "|   0  MIG 3g.20gb       9        2          0:4     |"  # line 8


def test_a_listing_missing_an_instance_is_refused_at_the_lgi_row(tmp_path: Path) -> None:
    created = _variant(tmp_path, CREATED, CREATED.read_text().splitlines()[9] + "\n", "")  # GI 2's row
    with pytest.raises(InstanceError) as err:
        _guide(GUIDE_L, GUIDE_LGI, created)
    assert str(err.value) == (
        f"{GUIDE_LGI}:8: GPU instance 2 (3g.20gb) on GPU 0 is not among the MIG devices {created}:2 shows "
        "(GI 1): the files show different states (a listing printed in a container shows only the "
        "container's devices)"
    )
    listing = _variant(tmp_path, GUIDE_L, GUIDE_L.read_text().splitlines()[2] + "\n", "")  # device 1
    with pytest.raises(InstanceError) as err:
        _guide(listing, GUIDE_LGI)
    assert str(err.value).startswith(
        f"{GUIDE_LGI}:8: GPU instance 2 (3g.20gb) on GPU 0 is not among the MIG devices {listing}:1 shows "
        "(3g.20gb): "
    )


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        (GI2, GI2.replace(" 9  ", "99  "), 8, "profile id 99 is not a profile of A100-40GB"),
        (GI1, GI1.replace("4:4", "2:4"), 6, "2 is not a legal start of 3g.20gb on A100-40GB (0, 4)"),
        (GI2, GI2.replace("0:4", "4:4"), 8, "overlaps running workload 'n1-gpu0-gi1' on GPU 'n1-gpu0' at slot 4"),
        (GI2, GI2.replace(" 2  ", " 1  "), 8, "GPU instance 1 on GPU 0 is also at LGI:6"),
        (GI2, GI2.replace("3g.20gb", "3g.20gb\x1b[2J"), 8, "profile name must be one line of printable "
         "characters: '3g.20gb\\x1b[2J' has '\\x1b' at 7"),
    ],
)  # fmt: skip
def test_a_bad_lgi_row_is_refused_at_its_line(
    tmp_path: Path, old: str, new: str, line: int, message: str
) -> None:
    lgi = _variant(tmp_path, GUIDE_LGI, old, new)
    with pytest.raises(InstanceError) as err:
        _guide(lgi, gpu_model="A100-40GB")
    assert str(err.value) == f"{lgi}:{line}: {message.replace('LGI', str(lgi))}"


def test_an_lgi_gpu_the_listing_lacks_is_refused(tmp_path: Path) -> None:
    lgi = _variant(tmp_path, GUIDE_LGI, GI2, GI2.replace("|   0", "|   1"))
    with pytest.raises(InstanceError) as err:
        _guide(GUIDE_L, lgi)
    assert str(err.value) == f"{lgi}:8: GPU 1 is not among the listed GPUs [0]"


def test_a_lone_lgi_keeps_a_gpu_it_implies_of_unknown_layout(tmp_path: Path) -> None:
    """GI 2 moved to GPU 2: GPU 1 exists (indices run from 0) but no row shows what it holds."""
    lgi = _variant(tmp_path, GUIDE_LGI, GI2, GI2.replace("|   0", "|   2"))
    inst = _guide(lgi, gpu_model="A100-40GB")
    assert [(g.id, g.layout_known) for g in inst.gpus] == [
        ("n1-gpu0", True), ("n1-gpu1", False), ("n1-gpu2", True)
    ]  # fmt: skip
    assert inst.notes == (
        "n1: no file lists its GPUs, so a GPU after GPU 2 is not seen (add the host's nvidia-smi -L); "
        "GPU 1 has no -lgi row: layout unknown",
    )


def test_a_uuid_on_two_hosts_is_refused(tmp_path: Path) -> None:
    copy = _variant(tmp_path, GUIDE_L, "GPU 0:", "GPU 0:")
    with pytest.raises(InstanceError) as err:
        instance_from_nvidia_smi({"n1": [GUIDE_L, GUIDE_LGI], "n2": [copy, GUIDE_LGI]})
    assert str(err.value) == (
        f"{copy}:1: UUID GPU-e86cb44c-6756-fd30-cd4a-1e6da3caf9b0 is also GPU 0 of host n1 ({GUIDE_L}:1)"
    )


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("x\ntouch pwned", "must be one line of printable characters: 'x\\ntouch pwned' has '\\n' at 1"),
        ("-oProxyCommand=sh", "must not start with '-': '-oProxyCommand=sh'"),
        ("A100\u202e", "must be one line of printable characters: 'A100\\u202e' has '\\u202e' at 4"),
    ],
)
def test_names_carrying_payloads_are_refused(tmp_path: Path, value: str, rule: str) -> None:
    with pytest.raises(InstanceError) as err:
        instance_from_nvidia_smi({value: [GUIDE_L]})
    assert str(err.value) == f"hosts: host name {rule}"
    if "\n" in value:
        return  # a product name is read from one line
    listing = _variant(tmp_path, GUIDE_L, "A100-SXM4-40GB", value)
    with pytest.raises(InstanceError) as err:
        _guide(listing)
    assert str(err.value) == f"{listing}:1: product name {rule}"


def test_unknown_product(tmp_path: Path) -> None:
    listing = _variant(tmp_path, GUIDE_L, "A100-SXM4-40GB", "NVIDIA Quadro Imaginary")
    with pytest.raises(InstanceError) as err:
        _guide(listing, GUIDE_LGI)
    assert str(err.value) == (
        f"{listing}:1: 'Quadro-Imaginary' is not in the catalog; give the host's `nvidia-smi mig -lgip "
        "and -lgipp` output to build it as a custom model"
    )


def test_unreadable_text(tmp_path: Path) -> None:
    junk = tmp_path / "junk.txt"  # hand-made: not any output
    junk.write_text("hello\n")
    with pytest.raises(InstanceError, match=r"junk\.txt:1: expected the output of nvidia-smi"):
        instance_from_nvidia_smi({"n1": [junk]})


def test_the_fixtures_are_the_ones_described() -> None:
    """Every nvidia-smi fixture has a row in its SOURCES.md, and every row a file."""
    listed = set(re.findall(r"^\| `([^`]+)` \|", (GUIDE / "SOURCES.md").read_text(), re.M))
    assert listed == {p.name for p in GUIDE.iterdir() if p.name != "SOURCES.md"}


def test_a_file_name_with_an_escape_sequence_is_shown_escaped(tmp_path: Path) -> None:
    node = tmp_path / "node"
    node.mkdir()
    listing = node / "\x1b[2JL.txt"
    listing.write_text(GUIDE_L.read_text())
    with pytest.raises(InstanceError) as err:
        instance_from_nvidia_smi({"n1": [node]})
    assert str(err.value) == (
        f"{str(listing)!r}:2: MIG device 3g.20gb on GPU 0 has no known start; the output of "
        "`nvidia-smi mig -lgi` is needed for the starts"
    )


def test_merge_keeps_gpus_the_import_lacks_of_unknown_layout(tmp_path: Path) -> None:
    """Base: the lone -lgi with GI 2 moved to GPU 2 (GPUs 0-2); import: -L and -lgi (GPU 0 only)."""
    lgi = _variant(tmp_path, GUIDE_LGI, GI2, GI2.replace("|   0", "|   2"))
    base = _guide(lgi, gpu_model="A100-40GB")
    merged, notes = merge_import(base, _guide(GUIDE_L, GUIDE_LGI, CREATED))
    assert [(g.id, g.layout_known) for g in merged.gpus] == [
        ("n1-gpu0", True), ("n1-gpu1", False), ("n1-gpu2", False)
    ]  # fmt: skip
    assert merged.workloads == () and [i.gpu_instance_id for i in merged.idle] == [1, 2]
    assert notes == (
        "n1: n1-gpu1, n1-gpu2 not in the import; kept with an unknown layout (import the host's nvidia-smi "
        "-L with its -lgi, or remove them)",
        "n1-gpu0-gi1: idle now at n1-gpu0 start 4; dropped as a workload",
        "n1-gpu2-gi2: on n1-gpu2, which the import does not show; dropped",
    )
    # the base's note about n1 described what the import replaced; the import's own note stays
    assert merged.notes == (f"n1: GPU 0 GI 1 (3g.20gb), GPU 0 GI 2 (3g.20gb) imported idle: no process runs in "
        f"them by {CREATED}:14 (a process table printed in a container shows only the container's processes)",
        *notes)  # fmt: skip
