"""The nvidia-smi parsers on the recorded outputs of ``../shared/interop/`` and on broken texts.

The recorded files are read from where they are kept (never copied here); every value asserted
below was read off the file by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mipopt.interop import (
    PARSERS,
    NvidiaSmiError,
    detect,
    gpu_instance_profile_name,
    parse_lci,
    parse_lgi,
    parse_lgip,
    parse_lgipp,
    parse_list,
    parse_query,
    parse_query_xml,
    parse_summary,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "interop"
FILES = sorted(p.name for p in SHARED.glob("*.txt")) if SHARED.is_dir() else []
needs_shared = pytest.mark.skipif(not FILES, reason="the recorded outputs are not in ../shared/interop")

#: Recorded files the parsers refuse, with the reason: each is not one nvidia-smi output.
REFUSED = {
    # a shell loop's output: `NVIDIA_VISIBLE_DEVICES=n` lines between four containers' `-L` outputs
    "A30__L__4.txt": "A30__L__4.txt:1: expected 'GPU N: NAME (UUID: GPU-...)' or "
    "'  MIG PROFILE Device N: (UUID: MIG-...)', got 'NVIDIA_VISIBLE_DEVICES=3'",
    # an excerpt: the first 35 of 1,995 lines, so the XML never closes
    "RTX-PRO-6000-Blackwell__q-x__1.txt": "RTX-PRO-6000-Blackwell__q-x__1.txt:35: expected well-formed "
    "nvidia-smi -q -x XML, got 'the end of the text (no element found)'",
}


def read(name: str) -> str:
    return (SHARED / name).read_text()


def form_of(name: str) -> str:
    kind = name.split("__")[1]
    return "mig-parted" if kind == "mig-parted-config" else kind


@needs_shared
def test_the_recorded_set_is_the_one_described() -> None:
    """43 outputs plus SOURCES.md; a file added there gets a form and a test here."""
    assert len(FILES) == 43 and (SHARED / "SOURCES.md").is_file()
    assert {form_of(f) for f in FILES} == set(PARSERS) | {"mig-parted"}


@needs_shared
@pytest.mark.parametrize("name", FILES)
def test_every_recorded_file_is_detected_as_its_form(name: str) -> None:
    assert detect(read(name), name) == form_of(name)


@needs_shared
@pytest.mark.parametrize("name", [f for f in FILES if form_of(f) != "mig-parted"])
def test_every_recorded_file_parses_or_is_refused_with_its_reason(name: str) -> None:
    parse = PARSERS[form_of(name)]
    if name in REFUSED:
        with pytest.raises(NvidiaSmiError) as err:
            parse(read(name), name)
        assert str(err.value) == REFUSED[name]
    else:
        assert parse(read(name), name)


@needs_shared
def test_counts_per_form() -> None:
    """Parsed (and refused) files per form: what the final report states."""
    parsed: dict[str, int] = {}
    for name in FILES:
        if form_of(name) != "mig-parted" and name not in REFUSED:
            parsed[form_of(name)] = parsed.get(form_of(name), 0) + 1
    assert parsed == {"L": 9, "lgip": 5, "lgipp": 4, "lgi": 5, "lci": 1, "nvidia-smi": 7, "q": 3, "q-x": 2}


# -- nvidia-smi -L ---------------------------------------------------------------------------


@needs_shared
def test_list_r450_uuids_carry_the_instance_ids() -> None:
    (gpu,) = parse_list(read("A100-40GB__L__5.txt"), "A100-40GB__L__5.txt")
    assert (gpu.index, gpu.product_name, gpu.uuid) == (
        0,
        "A100-SXM4-40GB",
        "GPU-4200ccc0-2667-d4cb-9137-f932c716232a",
    )
    assert [(d.name, d.device, d.gpu_instance_id, d.compute_instance_id) for d in gpu.mig_devices] == [
        ("1g.5gb", i, 7 + i, 0) for i in range(7)
    ]
    (gpu,) = parse_list(read("A100-40GB__L__6.txt"), "A100-40GB__L__6.txt")
    assert [(d.name, d.gpu_instance_id, d.line) for d in gpu.mig_devices] == [
        ("3g.20gb", 2, 2),
        ("2g.10gb", 3, 3),
        ("1g.5gb", 9, 4),
    ]


@needs_shared
def test_list_later_drivers() -> None:
    gpus = parse_list(read("GH200-96GB__L__1.txt"), "x")
    assert [(g.index, g.product_name, len(g.mig_devices)) for g in gpus] == [
        (0, "NVIDIA GH200 96GB HBM3", 7),
        (1, "NVIDIA GH200 96GB HBM3", 7),
    ]
    assert {(d.name, d.gpu_instance_id) for g in gpus for d in g.mig_devices} == {("1g.12gb", None)}
    assert gpus[1].mig_devices[6].uuid == "MIG-c7cbc24b-a93f-5ff3-b388-deba1f3ac17e"

    gpus = parse_list(read("RTX-PRO-6000-Blackwell__L__1.txt"), "x")  # starts with a blank line
    assert [g.index for g in gpus] == list(range(8)) and gpus[0].line == 2
    assert {g.product_name for g in gpus} == {"NVIDIA RTX PRO 6000 Blackwell Server Edition"}
    assert [len(g.mig_devices) for g in gpus] == [4] * 8

    (gpu,) = parse_list(read("GH200-480GB__L__1.txt"), "x")
    assert gpu.product_name == "NVIDIA GH200 480GB"
    assert [d.name for d in gpu.mig_devices] == ["1g.24gb"] * 3 + ["1g.12gb"]
    (gpu,) = parse_list(read("H100-80GB__L__4.txt"), "x")  # CRLF line ends
    assert [d.name for d in gpu.mig_devices] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    (gpu,) = parse_list(read("H100-80GB__L__2.txt"), "x")
    assert gpu.product_name == "NVIDIA H100 PCIe" and [d.device for d in gpu.mig_devices] == [0, 1, 2, 3]
    (gpu,) = parse_list(read("GB200__L__1.txt"), "x")
    assert (gpu.product_name, [d.name for d in gpu.mig_devices]) == ("NVIDIA GB200", ["1g.24gb"])


def test_compute_instance_names_map_to_their_gpu_instance() -> None:
    assert gpu_instance_profile_name("1c.2g.12gb") == "2g.12gb"
    assert gpu_instance_profile_name("2c.3g.40gb") == "3g.40gb"
    assert gpu_instance_profile_name("1g.24gb+me.all") == "1g.24gb+me.all"


# -- mig -lgip / -lgipp ----------------------------------------------------------------------


@needs_shared
def test_lgip() -> None:
    rows = parse_lgip(read("H100-80GB__lgip__1.txt"), "x")
    assert [(r.name, r.profile_id) for r in rows] == [
        ("1g.10gb", 19),
        ("1g.10gb+me", 20),
        ("1g.20gb", 15),
        ("2g.20gb", 14),
        ("3g.40gb", 9),
        ("4g.40gb", 5),
        ("7g.80gb", 0),
    ]
    big = rows[-1]
    assert (big.gpu, big.free, big.total, big.memory_gib, big.p2p) == (0, 1, 1, 79.0, False)
    assert (big.sm, big.dec, big.enc, big.ce, big.jpeg, big.ofa, big.line) == (114, 7, 0, 8, 7, 1, 24)

    rows = parse_lgip(read("A30__lgip__1.txt"), "x")
    assert [(r.name, r.free, r.total, r.memory_gib) for r in rows] == [
        ("1g.6gb", 0, 4, 5.81),
        ("1g.6gb+me", 0, 1, 5.81),
        ("2g.12gb", 0, 2, 11.69),
        ("4g.24gb", 0, 1, 23.5),
    ]
    rows = parse_lgip(read("RTX-PRO-6000-Blackwell__lgip__1.txt"), "x")
    assert len(rows) == 11 and [r.profile_id for r in rows] == [14, 21, 47, 65, 67, 5, 35, 64, 66, 0, 32]
    me_all = rows[3]
    assert (me_all.name, me_all.dec, me_all.enc, me_all.ce, me_all.jpeg, me_all.ofa) == (
        "1g.24gb+me.all",
        4,
        4,
        1,
        4,
        1,
    )
    rows = parse_lgip(read("GH200-480GB__lgip__1.txt"), "x")  # ends with an empty line
    assert [r.name for r in rows][-1] == "7g.96gb" and rows[-1].memory_gib == 93.0 and len(rows) == 7


@needs_shared
def test_lgipp() -> None:
    by_id = {p.profile_id: (p.starts, p.size) for p in parse_lgipp(read("H100-80GB__lgipp__1.txt"), "x")}
    assert by_id == {
        19: ((0, 1, 2, 3, 4, 5, 6), 1),
        20: ((0, 1, 2, 3, 4, 5, 6), 1),
        15: ((0, 2, 4, 6), 2),
        14: ((0, 2, 4), 2),
        9: ((0, 4), 4),
        5: ((0,), 4),
        0: ((0,), 8),
    }
    assert parse_lgipp(read("H100-NVL-94GB__lgipp__1.txt"), "x") == parse_lgipp(
        read("H100-80GB__lgipp__1.txt"), "x"
    )
    a30 = parse_lgipp(read("A30__lgipp__1.txt"), "x")
    assert [(p.profile_id, p.starts, p.size, p.line) for p in a30] == [
        (14, (0, 1, 2, 3), 1, 1),
        (21, (0, 1, 2, 3), 1, 2),
        (5, (0, 2), 2, 3),
        (0, (0,), 4, 4),
    ]
    rtx = {
        p.profile_id: (p.starts, p.size)
        for p in parse_lgipp(read("RTX-PRO-6000-Blackwell__lgipp__1.txt"), "x")
    }
    assert (
        rtx[14] == ((0, 3, 6, 9), 3) and rtx[64] == ((0, 6), 6) and rtx[32] == ((0,), 12) and len(rtx) == 11
    )


# -- mig -lgi / -lci -------------------------------------------------------------------------


@needs_shared
def test_lgi() -> None:
    rows = parse_lgi(read("A100-40GB__lgi__6.txt"), "x")
    assert [(r.gpu, r.name, r.profile_id, r.instance_id, r.start, r.size) for r in rows] == [
        (0, "1g.5gb", 19, 7 + i, i, 1) for i in range(7)
    ]
    assert [r.line for r in rows] == [6, 8, 10, 12, 14, 16, 18]
    rows = parse_lgi(read("H100-80GB__lgi__1.txt"), "x")
    assert [(r.profile_id, r.instance_id, r.start, r.size) for r in rows] == [
        (19, 7, 0, 1),
        (19, 8, 1, 1),
        (19, 9, 2, 1),
        (9, 2, 4, 4),
    ]
    rows = parse_lgi(read("RTX-PRO-6000-Blackwell__lgi__1.txt"), "x")
    assert [(r.name, r.profile_id, r.instance_id, r.start, r.size) for r in rows] == [
        ("1g.24gb", 14, 5, 6, 3),
        ("1g.24gb", 14, 6, 9, 3),
        ("2g.48gb", 5, 1, 0, 6),
    ]
    rows = parse_lgi(read("RTX-PRO-6000-Blackwell__lgi__2.txt"), "x")
    assert [(r.instance_id, r.start) for r in rows] == [(3, 0), (4, 3), (5, 6), (6, 9)]
    rows = parse_lgi(read("A30__lgi__1.txt"), "x")
    assert [(r.profile_id, r.instance_id, r.start, r.size) for r in rows] == [
        (14, 3 + i, i, 1) for i in range(4)
    ]


@needs_shared
def test_lci() -> None:
    rows = parse_lci(read("RTX-PRO-6000-Blackwell__lci__1.txt"), "x")
    assert [
        (r.gpu, r.gpu_instance_id, r.name, r.profile_id, r.instance_id, r.start, r.size) for r in rows
    ] == [(0, gi, "1g.24gb", 0, 0, 0, 1) for gi in (3, 4, 5, 6)]
    assert rows[0].line == 7


# -- plain nvidia-smi ------------------------------------------------------------------------


@needs_shared
def test_summary_r450_without_mig_devices() -> None:
    report = parse_summary(read("A100-40GB__nvidia-smi__6.txt"), "x")
    assert report.driver_version == "450.80.02"
    assert [(g.index, g.product_name, g.bus_id, g.mig_mode) for g in report.gpus] == [
        (0, "A100-SXM4-40GB", "00000000:00:04.0", "Enabled")
    ]
    assert report.mig_devices == () and report.processes == ()


@needs_shared
def test_summary_r525_r535_r560() -> None:
    report = parse_summary(read("H100-80GB__nvidia-smi__2.txt"), "x")  # time stamp line first
    assert (report.driver_version, report.gpus[0].product_name) == ("525.125.06", "NVIDIA H100 PCIe")
    (dev,) = report.mig_devices
    assert (dev.gpu, dev.gpu_instance_id, dev.compute_instance_id, dev.device) == (0, 8, 0, 0)
    assert (dev.memory_used_mib, dev.memory_total_mib, dev.sm, dev.line) == (6, 9856, 14, 21)

    report = parse_summary(read("H100-80GB__nvidia-smi__3.txt"), "x")
    assert [g.index for g in report.gpus] == list(range(8)) and report.gpus[7].bus_id == "00000000:DF:00.0"
    assert len(report.mig_devices) == 32
    assert [d.gpu_instance_id for d in report.mig_devices if d.gpu == 4] == [1, 5, 13, 14]
    assert [d.gpu_instance_id for d in report.mig_devices if d.gpu == 0] == [2, 3, 9, 10]

    report = parse_summary(read("H100-80GB__nvidia-smi__4.txt"), "x")
    assert len(report.mig_devices) == 16
    assert {(d.gpu_instance_id, d.memory_total_mib) for d in report.mig_devices} == {(1, 40448), (2, 40448)}

    report = parse_summary(read("H100-NVL-94GB__nvidia-smi__1.txt"), "x")
    assert report.gpus[0].bus_id == "00000001:00:00.0"
    assert [(d.gpu_instance_id, d.memory_total_mib, d.sm) for d in report.mig_devices] == [
        (1, 47488, 60),
        (5, 22144, 26),
        (13, 11008, 16),
    ]


@needs_shared
def test_summary_r610() -> None:
    report = parse_summary(read("RTX-PRO-6000-Blackwell__nvidia-smi__1.txt"), "x")
    assert report.driver_version == "610.43.02"
    assert report.gpus[0].product_name == "NVIDIA RTX PRO 6000 Blac..."  # cut short by nvidia-smi
    (dev,) = report.mig_devices
    assert (dev.gpu_instance_id, dev.memory_used_mib, dev.memory_total_mib, dev.sm) == (6, 1786, 24192, 46)
    (proc,) = report.processes
    assert (proc.gpu, proc.gpu_instance_id, proc.compute_instance_id, proc.pid) == (0, 6, 0, 1)
    assert (proc.kind, proc.name, proc.memory_mib) == ("C", "python3", 1714)

    # trimmed by its author to GPUs 2 and 3, no blank line between the tables
    report = parse_summary(read("RTX-PRO-6000-Blackwell__nvidia-smi__2.txt"), "x")
    assert [g.index for g in report.gpus] == [2, 3]
    assert [(d.gpu, d.gpu_instance_id, d.device) for d in report.mig_devices] == [
        (gpu, 3 + i, i) for gpu in (2, 3) for i in range(4)
    ]
    assert [p.pid for p in report.processes] == [698976]


# -- -q / -q -x ------------------------------------------------------------------------------


@needs_shared
def test_query_text_excerpts() -> None:
    """The three -q files are excerpts (one GPU, up to MIG Mode): what is printed is read."""
    cases = {
        "A100-80GB__q__3.txt": ("555.42.02", 4, "00000000:68:00.0", "NVIDIA A100-SXM4-80GB"),
        "H100-80GB__q__1.txt": ("565.57.01", 8, "00000000:18:00.0", "NVIDIA H100 80GB HBM3"),
        "H100-NVL-94GB__q__2.txt": ("550.54.14", 2, "00000000:AD:00.0", "NVIDIA H100 NVL"),
    }
    for name, (driver, attached, bus, product) in cases.items():
        report = parse_query(read(name), name)
        (gpu,) = report.gpus
        assert (report.driver_version, report.attached_gpus, gpu.bus_id, gpu.product_name) == (
            driver,
            attached,
            bus,
            product,
        )
        assert (gpu.mig_mode_current, gpu.mig_mode_pending, gpu.mig_devices) == ("Disabled", "Disabled", ())
        assert (gpu.uuid, gpu.pci_device_id, gpu.line) == (None, None, 8)


@needs_shared
def test_query_xml() -> None:
    report = parse_query_xml(read("A100-40GB__q-x__1.txt"), "x")
    (gpu,) = report.gpus
    assert (report.driver_version, report.attached_gpus) == ("510.47.03", 1)
    assert (gpu.bus_id, gpu.product_name, gpu.pci_device_id) == (
        "00000000:00:04.0",
        "NVIDIA A100-SXM4-40GB",
        "20B010DE",
    )
    assert (gpu.uuid, gpu.mig_mode_current, gpu.line) == (
        "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a",
        "Enabled",
        8,
    )
    assert [(d.index, d.gpu_instance_id, d.compute_instance_id, d.line) for d in gpu.mig_devices] == [
        (0, 1, 0, 20),
        (1, 2, 0, 51),
    ]
    report = parse_query_xml(read("A100-80GB__q-x__1.txt"), "x")
    (gpu,) = report.gpus  # attached_gpus counts 4: one GPU's record, as `-q -x -i N` prints
    assert (report.attached_gpus, gpu.product_name, gpu.pci_device_id) == (
        4,
        "NVIDIA A100-SXM4-80GB",
        "20B210DE",
    )
    assert [(d.index, d.gpu_instance_id) for d in gpu.mig_devices] == [(0, 3), (1, 4), (2, 5), (3, 6)]


# -- hand-made texts: what is skipped, what is refused ---------------------------------------


def test_query_text_with_mig_devices() -> None:
    # hand-made, in the shape of a driver 535 `nvidia-smi -q` with MIG devices
    text = (
        "==============NVSMI LOG==============\n\n"
        "Driver Version                            : 535.54.03\n"
        "Attached GPUs                             : 1\n"
        "GPU 00000000:01:00.0\n"
        "    Product Name                          : NVIDIA A100-SXM4-80GB\n"
        "    MIG Mode\n"
        "        Current                           : Enabled\n"
        "        Pending                           : Enabled\n"
        "    MIG Devices\n"
        "        MIG Device\n"
        "            Index                         : 0\n"
        "            GPU Instance ID               : 3\n"
        "            Compute Instance ID           : 0\n"
        "            Device Attributes\n"
        "                Shared\n"
        "                    Multiprocessor count  : 42\n"
        "    GPU UUID                              : GPU-5135\n"
        "    PCI\n"
        "        Bus                               : 0x01\n"
        "        Device Id                         : 0x20B210DE\n"
    )
    (gpu,) = parse_query(text, "node1-q.txt").gpus
    assert (gpu.uuid, gpu.pci_device_id, gpu.mig_mode_current) == ("GPU-5135", "20B210DE", "Enabled")
    assert [(d.index, d.gpu_instance_id, d.compute_instance_id, d.line) for d in gpu.mig_devices] == [
        (0, 3, 0, 11)
    ]
    with pytest.raises(NvidiaSmiError) as err:
        parse_query(
            text.replace("GPU Instance ID               : 3", "GPU Instance ID               : 3a"), "q.txt"
        )
    assert str(err.value) == "q.txt:13: expected a whole number, got '3a'"


def test_decorations_are_skipped() -> None:
    # hand-made: what a GPU without MIG instances prints
    assert parse_lgi("No MIG-enabled devices found.\n", "x") == ()
    assert parse_lgipp("\nNo MIG-enabled devices found.\n\n", "x") == ()
    assert parse_list("\n", "x") == ()


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        # all hand-made, each broken in one place
        (
            parse_list,
            "GPU 0: NVIDIA A30 (UUID: GPU-05aa)\n  MIG 1g.6gb Device x: (UUID: MIG-70dc)\n",
            "f:2: expected 'GPU N: NAME (UUID: GPU-...)' or '  MIG PROFILE Device N: (UUID: MIG-...)', "
            "got '  MIG 1g.6gb Device x: (UUID: MIG-70dc)'",
        ),
        (
            parse_list,
            "GPU 0: NVIDIA A30 (UUID: GPU-05aa)\nGPU 0: NVIDIA A30 (UUID: GPU-05aa)\n",
            "f:2: expected one line per GPU index (GPU 0 is on line 1), got 'GPU 0: NVIDIA A30 (UUID: GPU-05aa)'",
        ),
        (
            parse_list,
            "  MIG 1g.6gb Device 0: (UUID: MIG-70dc)\n",
            "f:1: expected a GPU line before its MIG devices, got 'MIG 1g.6gb Device 0: (UUID: MIG-70dc)'",
        ),
        (
            parse_lgip,
            "| GPU instance profiles: |\n| GPU Name ID |\n|====|\n"
            "|   0  MIG 1g.6gb        14     0/4        5.81       No     14     1     0   |\n+----+\n",
            "f:5: expected the 'CE JPEG OFA' line of profile 1g.6gb, got 'the end of the profile'",
        ),
        (
            parse_lgip,
            "| GPU instance profiles: |\n|====|\n"
            "|   0  MIG 1g.6gb        14     0/4        5,81       No     14     1     0   |\n"
            "|                                                             1     0     0   |\n",
            "f:3: expected '| GPU  MIG NAME  ID  FREE/TOTAL  GiB  P2P  SM  DEC  ENC |', "
            "got '|   0  MIG 1g.6gb        14     0/4        5,81       No     14     1     0   |'",
        ),
        (
            parse_lgipp,
            "GPU  0 Profile ID 14 Placements: {0,1,,3}:1\n",
            "f:1: expected 'GPU N Profile ID P Placements: {S,...}:SIZE', got 'GPU  0 Profile ID 14 Placements: {0,1,,3}:1'",
        ),
        (
            parse_lgi,
            "+----+\n| GPU instances: |\n| GPU Name |\n|====|\n|   0  MIG 1g.5gb   19   7   0-1   |\n+----+\n",
            "f:5: expected '| GPU  MIG NAME  PROFILE-ID  INSTANCE-ID  START:SIZE |', got '|   0  MIG 1g.5gb   19   7   0-1   |'",
        ),
        (
            parse_lgi,
            "| GPU instances: |\n|====|\n|   0  MIG 1g.5gb   19   7   0:1   |\nGPU 0 is busy\n",
            "f:4: expected a row of an nvidia-smi table or a border, got 'GPU 0 is busy'",
        ),
        (
            parse_lgi,  # the rule under the headers is missing: the row is not taken for a header
            "| GPU instances: |\n| GPU Name |\n|   0  MIG 1g.5gb   19   7   0:1   |\n",
            "f:3: expected the '|===' rule under the column headers, got 'the end of the text'",
        ),
        (
            parse_lgi,
            "| GPU instances: |\n| a |\n| b |\n| c |\n| d |\n| e |\n|===|\n",
            "f:6: expected the '|===' rule under the column headers, got '| e |'",
        ),
        (
            parse_lgip,
            "| GPU instances: |\n|====|\n|   0  MIG 1g.5gb   19   7   0:1   |\n",
            "f:3: expected a row of the 'lgip' table, got '|   0  MIG 1g.5gb   19   7   0:1   |'",
        ),
        (
            parse_lci,
            "| Compute instances: |\n|====|\n|   0      3       MIG 1g.24gb          0         x          0:1     |\n",
            "f:3: expected '| GPU  GI-ID  MIG NAME  PROFILE-ID  INSTANCE-ID  START:SIZE |', "
            "got '|   0      3       MIG 1g.24gb          0         x          0:1     |'",
        ),
        (
            parse_summary,
            "| MIG devices: |\n|====|\n|  0    x   0   0  |      6MiB /  9856MiB | 14      0 |  1   0    1    0    1 |\n",
            "f:3: expected '| GPU  GI  CI  MIG | USED / TOTAL | SM ... |' (a MIG device row), "
            "got '|  0    x   0   0  |      6MiB /  9856MiB | 14      0 |  1   0    1    0    1 |'",
        ),
        (
            parse_summary,
            "+----+\n",
            "f:1: expected the '| NVIDIA-SMI VERSION ...' banner, got 'no banner in the text'",
        ),
        (
            parse_summary,
            "| GPU instances: |\n|====|\n|   0  MIG 1g.5gb   19   7   0:1   |\n",
            "f:1: expected a table of plain nvidia-smi output, got 'GPU instances:'",
        ),
        (
            parse_query,
            "==============NVSMI LOG==============\nAttached GPUs : four\n",
            "f:2: expected a whole number, got 'four'",
        ),
        (
            parse_query,
            "Attached GPUs : 1\n    Product Name : NVIDIA A30\n",
            "f:2: expected 'GPU BUS-ID' before its fields, got 'Product Name : NVIDIA A30'",
        ),
        (
            parse_query_xml,
            '<?xml version="1.0" ?>\n<nvidia_smi_log>\n<gpu id="0:1:0.0">\n<mig_devices>\n<mig_device>\n'
            "<index>0</index>\n<gpu_instance_id>x</gpu_instance_id>\n<compute_instance_id>0</compute_instance_id>\n"
            "</mig_device>\n</mig_devices>\n</gpu>\n</nvidia_smi_log>\n",
            "f:7: expected a whole number, got 'x'",
        ),
        (
            parse_query_xml,
            "<nvidia_smi_log>\n<gpu>\n<product_name>NVIDIA A30</product_name>\n</gpu>\n</nvidia_smi_log>\n",
            "f:2: expected <gpu id=\"BUS-ID\">, got '<gpu> without id'",
        ),
        (
            parse_query_xml,
            "<nvidia_smi_log>\n<gpu id='0:1:0.0'>\n</nvidia_smi_log>\n",
            "f:3: expected well-formed nvidia-smi -q -x XML, got 'mismatched tag'",
        ),
    ],
)
def test_broken_text_is_refused_naming_file_and_line(
    parse: Callable[[str, str], object], text: str, message: str
) -> None:
    with pytest.raises(NvidiaSmiError) as err:
        parse(text, "f")
    assert str(err.value) == message
    assert err.value.path == message.split(": ", 1)[0] and isinstance(err.value, ValueError)


def test_detect_refuses_text_of_no_known_form() -> None:
    # hand-made
    with pytest.raises(NvidiaSmiError) as err:
        detect("hello\n", "notes.txt")
    assert str(err.value) == (
        "notes.txt:1: expected the output of nvidia-smi (-L, -q, -q -x, mig -lgip/-lgipp/-lgi/-lci) "
        "or a mig-parted config, got 'none of these'"
    )
