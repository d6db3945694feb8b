"""Product names and PCI device ids resolve to catalog models (issue 14), checked against
the recorded outputs of real machines in ``shared/interop`` (read from there, never copied),
and the catalog corrections found against them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from mipopt.catalog import (
    get_model,
    normalize_pci_device_id,
    normalize_product_name,
    products,
    resolve_product,
)
from mipopt.cli import main

INTEROP = Path(__file__).parents[2].parent / "shared/interop"
needs_interop = pytest.mark.skipif(not INTEROP.is_dir(), reason=f"recorded outputs not present at {INTEROP}")

# The model each file-name prefix names. GH200 480GB is the Grace Hopper superchip whose
# GPU is the H100 with 96GB (its -lgip lists 1g.12gb .. 7g.96gb, checked below).
PREFIX_MODEL = {
    "A30": "A30-24GB",
    "A100-40GB": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "H100-80GB": "H100-80GB",
    "H100-NVL-94GB": "H100-94GB",
    "GH200-480GB": "H100-96GB",
    "GH200-96GB": "H100-96GB",
    "GB200": "GB200-186GB",
    "RTX-PRO-6000-Blackwell": "RTX-PRO-6000-Blackwell-96GB",
}

_NAME_PATTERNS = {
    "L": re.compile(r"^GPU \d+: (.+?) \(UUID: ", re.MULTILINE),
    "q": re.compile(r"^\s*Product Name\s*: (.+?)\s*$", re.MULTILINE),
    "q-x": re.compile(r"<product_name>(.+?)</product_name>"),
    # the GPU table of plain nvidia-smi: "|   0  NVIDIA H100 NVL    On  |" (names may be cut with ...)
    "nvidia-smi": re.compile(r"^\|\s+\d+\s+(\S.*?)\s+(?:On|Off)\s+\|", re.MULTILINE),
}
_PCI_PATTERNS = (
    re.compile(r"<pci_device_id>(\w+)</pci_device_id>"),
    re.compile(r"^\s*Device Id\s*: (\w+)\s*$", re.MULTILINE),
)


def _recorded() -> list[tuple[str, str, str, str]]:
    """(file, kind, printed text, expected model) for every product name and PCI id printed."""
    found = []
    for path in sorted(INTEROP.glob("*__*__*.txt")) if INTEROP.is_dir() else []:
        prefix, kind, _ = path.name.split("__")
        if prefix not in PREFIX_MODEL:
            continue
        text = path.read_text()
        pattern = _NAME_PATTERNS.get(kind)
        names = set(pattern.findall(text)) if pattern else set()
        ids = {m for p in _PCI_PATTERNS for m in p.findall(text)}
        found += [(path.name, "name", n, PREFIX_MODEL[prefix]) for n in sorted(names)]
        found += [(path.name, "pci", i, PREFIX_MODEL[prefix]) for i in sorted(ids)]
    return found


RECORDED = _recorded()


@needs_interop
def test_the_recorded_outputs_print_the_names_the_issue_lists() -> None:
    printed = {text for _, what, text, _ in RECORDED if what == "name"}
    assert printed == {
        "A100-SXM4-40GB",  # R450 prints no "NVIDIA "
        "NVIDIA A100-SXM4-40GB",
        "NVIDIA A100-SXM4-80GB",
        "NVIDIA A30",
        "NVIDIA GB200",
        "NVIDIA GH200 480GB",
        "NVIDIA GH200 96GB HBM3",
        "NVIDIA H100 80GB HBM3",
        "NVIDIA H100 NVL",
        "NVIDIA H100 PCIe",
        "NVIDIA RTX PRO 6000 Blac...",  # cut by nvidia-smi's table
        "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    }
    assert {text for _, what, text, _ in RECORDED if what == "pci"} == {"20B010DE", "20B210DE"}


@needs_interop
@pytest.mark.parametrize(
    ("file", "what", "text", "model"), RECORDED, ids=[f"{r[0]}:{r[2]}" for r in RECORDED]
)
def test_every_printed_name_and_id_resolves_to_the_file_s_model(
    file: str, what: str, text: str, model: str
) -> None:
    assert resolve_product(text).name == model
    assert get_model(text).name == model
    assert get_model(text.upper()).name == model  # case does not matter


@needs_interop
def test_the_gh200_480gb_host_has_the_h100_96gb_profiles() -> None:
    lgip = (INTEROP / "GH200-480GB__lgip__1.txt").read_text()
    rows = re.findall(r"MIG (\S+)\s+(\d+)\s+\d+/(\d+)", lgip)
    model = resolve_product("NVIDIA GH200 480GB")
    assert [(name, int(pid), int(n)) for name, pid, n in rows] == [
        (p.name, p.id, p.max_instances) for p in model.profiles
    ]


def _device_filter_groups(text: str, config: str) -> list[tuple[list[str], list[str]]]:
    """(PCI ids, profile names) per device-filter entry of one mig-parted config."""
    groups: list[tuple[list[str], list[str]]] = []
    inside = False
    for line in text.splitlines():
        if re.match(r"^  \S", line):  # a config name (or its comment) at the top level
            inside = line.strip() == f"{config}:" or (inside and line.lstrip().startswith("#"))
            continue
        if not inside:
            continue
        if m := re.search(r"device-filter: \[?([^\]]+)\]?", line):
            groups.append(([i.strip(' "') for i in m.group(1).split(",")], []))
        elif (m := re.match(r'^\s+"([^"]+)": \d+', line)) and groups:
            groups[-1][1].append(m.group(1))
    return groups


@needs_interop
def test_nvidia_mig_parted_device_filters_agree_with_the_catalog() -> None:
    # NVIDIA's shipped default config names, per PCI id, the profiles of all-balanced: every id
    # the catalog knows must resolve to a model that has those profiles.
    text = (INTEROP / "multi__mig-parted-config__2.txt").read_text()
    groups = _device_filter_groups(text, "all-balanced")
    assert len(groups) >= 10
    known = {pci for p in products() for pci in p.pci_device_ids}
    checked = set()
    for ids, names in groups:
        for pci in ids:
            if normalize_pci_device_id(pci) not in known:
                continue  # A800, H800, B300, GB300, PG506: not catalog models
            model = resolve_product(pci)
            assert names and all(model.find(n) is not None for n in names), (pci, model.name, names)
            checked.add(normalize_pci_device_id(pci))
    assert known - checked == set()  # every id the catalog lists is one NVIDIA configures


@pytest.mark.parametrize(
    ("pci", "model"),
    [
        ("0x20B010DE", "A100-40GB"),
        ("20F110DE", "A100-40GB"),
        ("0x20b2", "A100-80GB"),
        ("10de:20b5", "A100-80GB"),
        ("0x20B710DE", "A30-24GB"),
        ("0x233010DE", "H100-80GB"),
        ("0x233110DE", "H100-80GB"),
        ("0x232110DE", "H100-94GB"),
        ("0x234210DE", "H100-96GB"),
        ("0x233510DE", "H200-141GB"),
        ("0x233B10DE", "H200-141GB"),
        ("0x234810DE", "GH200-144GB"),
        ("0x290110DE", "B200-180GB"),
        ("0x294110DE", "GB200-186GB"),
        ("0x2BB510DE", "RTX-PRO-6000-Blackwell-96GB"),
    ],
)
def test_pci_device_ids_resolve(pci: str, model: str) -> None:
    assert resolve_product(pci).name == model
    assert get_model(pci).name == model


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("NVIDIA A100 80GB PCIe", "A100-80GB"),
        ("NVIDIA H200", "H200-141GB"),
        ("NVIDIA B200", "B200-180GB"),
        ("B200", "B200-180GB"),  # reads as a device id too; as a name it is the B200
        ("nvidia  a100_sxm4_40gb", "A100-40GB"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000-Blackwell-96GB"),
    ],
)
def test_product_names_resolve(name: str, model: str) -> None:
    assert get_model(name).name == model


def test_normalization_rule() -> None:
    assert normalize_product_name(" NVIDIA  A100-SXM4-40GB ") == "a100 sxm4 40gb"
    assert normalize_product_name("A100_SXM4_40GB") == "a100 sxm4 40gb"
    assert normalize_pci_device_id("0x20b0") == "0x20B010DE"
    assert normalize_pci_device_id("20B010DE") == "0x20B010DE"
    assert normalize_pci_device_id("10de:20b0") == "0x20B010DE"
    assert normalize_pci_device_id("NVIDIA H100 NVL") is None


def test_an_ambiguous_cut_name_is_unknown() -> None:
    # "NVIDIA A100-SXM4-..." starts both the 40GB and the 80GB name
    with pytest.raises(KeyError, match=r"^\"unknown GPU product 'NVIDIA A100-SXM4-\.\.\.'"):
        resolve_product("NVIDIA A100-SXM4-...")
    assert resolve_product("NVIDIA A100-SXM4-4...").name == "A100-40GB"


def test_unknown_names_give_one_line_with_close_matches() -> None:
    with pytest.raises(KeyError) as err:
        resolve_product("NVIDIA A100-SXM4-41GB")
    message = err.value.args[0]
    assert message == (
        "unknown GPU product 'NVIDIA A100-SXM4-41GB' (closest: NVIDIA A100-SXM4-40GB, NVIDIA A100-SXM4-80GB, A100-40GB)"
    )
    with pytest.raises(KeyError) as err:
        get_model("NVIDIA H100 95GB HBM3")
    message = err.value.args[0]
    assert "\n" not in message
    assert message.startswith("unknown GPU model 'NVIDIA H100 95GB HBM3' (known: A30-24GB, A100-40GB, ")
    assert message.endswith("; closest: NVIDIA H100 80GB HBM3, NVIDIA GH200 96GB HBM3, H100-96GB)")
    with pytest.raises(KeyError, match=r"^\"unknown PCI device id '0x1DB410DE' \(see `mipopt info`\)\"$"):
        resolve_product("0x1DB410DE")  # a V100: no MIG


def test_products_table_is_consistent() -> None:
    models = {p.model for p in products()}
    assert len(models) == len(products()) == 11  # one entry per built-in model
    for p in products():
        assert p.names and p.attested
        assert all(resolve_product(n).name == p.model for n in p.names)
        assert all(resolve_product(i).name == p.model for i in p.pci_device_ids)


# --- corrections (issue 14, section 4)


@needs_interop
def test_h100_96gb_ids_19_and_20_are_confirmed_by_the_gh200_lgip() -> None:
    lgip = (INTEROP / "GH200-480GB__lgip__1.txt").read_text()
    assert re.search(r"MIG 1g\.12gb\s+19\s+7/7", lgip)
    assert re.search(r"MIG 1g\.12gb\+me\s+20\s+1/1", lgip)
    model = get_model("H100-96GB")
    for key in (19, 20):
        p = model.profile(key)
        assert p.source_note.startswith("confirmed by real -lgip"), p.name
        assert "GH200-480GB__lgip__1.txt" in p.source_note
        assert p.placement_status == "inferred"  # no real -lgipp: placements stay inferred
    assert model.profile(15).source_note.startswith("ids 15/14/9/5/0 confirmed")


def test_gb200_early_driver_names_are_aliases() -> None:
    model = get_model("GB200-186GB")
    assert model.profile("3g.95gb").name == "3g.93gb"
    assert model.profile("4g.95gb").name == "4g.93gb"
    assert model.profile("7g.189gb").name == "7g.186gb"
    assert model.profile("1g.24gb").name == "1g.23gb"


def test_profile_source_note_is_kept_but_not_part_of_identity() -> None:
    p = get_model("H100-96GB").profile(19)
    assert p.to_dict()["source_note"] == p.source_note
    assert dataclasses.replace(p, source_note="") == p  # a note changes no placement rule
    assert "source_note" not in dataclasses.replace(p, source_note="").to_dict()


def test_rtx_pro_6000_variants() -> None:
    (rtx,) = [p for p in products() if p.model == "RTX-PRO-6000-Blackwell-96GB"]
    assert rtx.pci_device_ids == ("0x2BB510DE",)  # the Server Edition's id, the only one attested
    assert [n.split("Blackwell ")[1] for n in rtx.names] == [
        "Server Edition",
        "Workstation Edition",
        "Max-Q Workstation Edition",
    ]
    assert "Server Edition" in rtx.attested and "not attested" in rtx.attested


# --- the command


def test_info_accepts_a_product_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "NVIDIA A100-SXM4-40GB"]) == 0
    assert capsys.readouterr().out.startswith("A100-40GB: 8 memory slots, 7 compute slices, 40 GB\n")
    assert main(["info", "0x232110DE"]) == 0
    assert capsys.readouterr().out.startswith("H100-94GB: ")


def test_info_unknown_product_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "NVIDIA A100-SXM4-41GB"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("mipopt: error: unknown GPU model 'NVIDIA A100-SXM4-41GB' (known: ")
    assert "closest: NVIDIA A100-SXM4-40GB" in err
