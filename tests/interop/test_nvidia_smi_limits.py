"""What ``import nvidia-smi`` refuses of hostile or huge input, and a fuzz test of its readers.

The fuzz test mutates the recorded outputs of ``tests/fixtures/nvidia-smi/`` one way at a time (a
line replaced, doubled, dropped or made huge; a number or a name swapped for another; the profile
id of an ``-lgi`` row changed), and feeds raw bytes: each is imported, or refused with an
:class:`~mipopt.errors.InstanceError` of one short printable line, never another exception. The
table tests each limit of ``docs/limits.md`` with its message, through the library and the command.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from factories import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.interop import instance_from_nvidia_smi
from mipopt.interop.build import read_output
from mipopt.interop.nvidia_smi import MAX_NAME_CHARS, MAX_TEXT_LINES, PARSERS, detect, parse_list
from mipopt.limits import MAX_GPUS

FIXTURES = ROOT / "tests" / "fixtures" / "nvidia-smi"
L = (FIXTURES / "mig-user-guide_A100-40GB_L.txt").read_text()
LGI = (FIXTURES / "mig-user-guide_A100-40GB_lgi.txt").read_text()
#: What the fuzz test mutates: the fixtures here, and the recorded outputs of every other form
#: (-q, -q -x, -lgip, -lgipp, -lci) where ``../shared/interop/`` is at hand.
SHARED = ROOT.parent / "shared" / "interop"
TEXTS = {p.name: p.read_text() for p in sorted([*FIXTURES.glob("*.txt"), *SHARED.glob("*__*.txt")])}

Capsys = pytest.CaptureFixture[str]

#: What an error message may be at most: a path, a rule and a short excerpt.
MESSAGE_CHARS = 600


def imported(tmp: Path, files: dict[str, str | bytes], gpu_model: str | None = None) -> object:
    """The import of ``files`` (name -> text or bytes) as one host's outputs."""
    paths = []
    for name, content in files.items():
        path = tmp / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        paths.append(path)
    return instance_from_nvidia_smi({"n1": paths}, gpu_model=gpu_model)


def refusal(tmp: Path, files: dict[str, str | bytes], gpu_model: str | None = None) -> str:
    with pytest.raises(InstanceError) as err:
        imported(tmp, files, gpu_model)
    return str(err.value).replace(str(tmp) + "/", "")


def assert_one_line(err: InstanceError) -> None:
    message = str(err)
    assert "\n" not in message and message.isprintable(), message[:200]
    assert len(message) <= MESSAGE_CHARS, message[:200]


# --- the limits, each with its message

LGI_ROW = "|   0  MIG 3g.20gb       9        1          4:4     |"


@pytest.mark.parametrize(
    ("case", "files", "message"),
    [
        (
            "latin-1",
            {"L.txt": b"GPU 0: A100-SXM4-40GB (UUID: GPU-1)\nGPU 1: A100 caf\xe9 (UUID: GPU-2)\n"},
            "L.txt:2: byte 0xe9 at column 16 is not UTF-8 text: nvidia-smi prints UTF-8 (a Latin-1 or binary file?)",
        ),
        (
            "binary",
            {"L.txt": b"GPU 0: A100\n\x7fELF\x02\x01\x01\x00\x00\x00"},
            "L.txt:2: a NUL byte at column 8: nvidia-smi prints text (a binary file?)",
        ),
        (
            "nul-before-a-bad-byte",
            {"L.txt": b"\x00\xff"},
            "L.txt:1: a NUL byte at column 1: nvidia-smi prints text (a binary file?)",
        ),
        (
            "utf-16",
            {"L.txt": "GPU 0: A100-SXM4-40GB (UUID: GPU-1)\n".encode("utf-16")},
            "L.txt: UTF-16 text (as Windows PowerShell writes with >): save it as UTF-8",
        ),
        (
            "lgi-id-of-another-profile",  # 1g.10gb printed with id 19, which is 1g.5gb on an A100-40GB
            {"lgi.txt": LGI.replace(LGI_ROW, "|   0  MIG 1g.10gb      19        1          4:1     |")},
            "lgi.txt:6: GPU instance 1 is 1g.10gb of size 1 with profile id 19, but id 19 is 1g.5gb of size 1 "
            "on A100-40GB (`mipopt info A100-40GB`): the row disagrees with the catalog",
        ),
        (
            "lgi-size-of-another-profile",
            {"lgi.txt": LGI.replace(LGI_ROW, "|   0  MIG 3g.20gb       9        1          4:2     |")},
            "lgi.txt:6: GPU instance 1 is 3g.20gb of size 2 with profile id 9, but id 9 is 3g.20gb of size 4 "
            "on A100-40GB (`mipopt info A100-40GB`): the row disagrees with the catalog",
        ),
        (
            "gpu-index-beyond-the-limit",
            {"L.txt": f"GPU {MAX_GPUS}: A100-SXM4-40GB (UUID: GPU-1)\n"},
            f"L.txt:1: GPU {MAX_GPUS}: a host of 100,001 GPUs, more than the limit of 100,000 (docs/limits.md)",
        ),
        (
            "lgi-gpu-index-beyond-the-limit",  # a lone -lgi: its GPUs 0 .. N would all be made
            {
                "lgi.txt": LGI.replace(
                    "|   0  MIG 3g.20gb       9        1", "| 99999999  MIG 3g.20gb   9   1"
                )
            },
            "lgi.txt:6: GPU 99999999: a host of 100,000,000 GPUs, more than the limit of 100,000 (docs/limits.md)",
        ),
        (
            "a-number-of-5000-digits",  # int() refuses more than 4,300 digits
            {
                "lgi.txt": LGI.replace(
                    "|   0  MIG 3g.20gb       9", "|   " + "9" * 5000 + "  MIG 3g.20gb       9"
                )
            },
            "lgi.txt:6: expected '| GPU  MIG NAME  PROFILE-ID  INSTANCE-ID  START:SIZE |', got '|   9999999",
        ),
        (
            "a-long-name",
            {"L.txt": f"GPU 0: {'A' * 1000} (UUID: GPU-1)\n"},
            "L.txt:1: product name 'AAAA",
        ),
        (
            "superscript-two-in-q",  # '²'.isdigit() is True, and int('²') fails
            {"q.txt": "==============NVSMI LOG==============\nAttached GPUs : ²\n"},
            "q.txt:2: expected a whole number, got '²'",
        ),
        (
            "attached-gpus-of-10-digits",
            {"q.txt": "==============NVSMI LOG==============\nAttached GPUs : 1000000000\n"},
            "q.txt:2: expected a whole number of at most 9 digits, got '1000000000'",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 40 and " " not in v else "",
)
def test_refused_in_one_line_naming_file_and_line(
    tmp_path: Path, case: str, files: dict[str, str | bytes], message: str
) -> None:
    got = refusal(tmp_path, files, gpu_model="A100-40GB" if "lgi" in case else None)
    assert got.startswith(message) if message.endswith(("'|   9999999", "'AAAA")) else got == message
    assert len(got) <= MESSAGE_CHARS and "\n" not in got


def test_a_long_name_is_refused_with_its_length_and_the_limit(tmp_path: Path) -> None:
    got = refusal(tmp_path, {"L.txt": f"GPU 0: {'A' * 1000} (UUID: GPU-1)\n"})
    assert got.endswith(f"has 1,000 characters, more than the limit of {MAX_NAME_CHARS} (docs/limits.md)")


def test_a_20_mb_junk_line_is_never_echoed_whole(tmp_path: Path) -> None:
    junk = "GPU 1: " + "x" * 20 * 2**20
    got = refusal(tmp_path, {"L.txt": "GPU 0: A100-SXM4-40GB (UUID: GPU-1)\n" + junk + "\n"})
    assert got.startswith("L.txt:2: expected 'GPU N: NAME (UUID: GPU-...)'") and len(got) < 400
    assert got.endswith("... (20971529 chars)")


def test_too_many_lines_are_refused_before_they_are_split() -> None:
    with pytest.raises(InstanceError) as err:
        parse_list("\n" * (MAX_TEXT_LINES + 1), "L.txt")
    assert str(err.value) == (
        f"L.txt:{MAX_TEXT_LINES + 1}: the text has 2,000,001 lines, more than the limit of 2,000,000 (docs/limits.md)"
    )


def test_a_file_beyond_the_byte_limit_is_read_no_further(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mipopt.interop.build.MAX_TEXT_BYTES", 1000)
    (tmp_path / "L.txt").write_text("x" * 1001)
    with pytest.raises(InstanceError) as err:
        read_output(tmp_path / "L.txt", "L.txt")
    assert str(err.value) == "L.txt: holds more than 1,000 bytes, the limit (docs/limits.md)"


def test_the_hosts_together_hold_at_most_the_gpu_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mipopt.interop.build.MAX_GPUS", 3)
    for host in ("n1", "n2"):
        (tmp_path / f"{host}.txt").write_text(
            "GPU 0: A100-SXM4-40GB\nGPU 1: A100-SXM4-40GB\n".replace("\n", " (UUID: GPU-{})\n").format(
                f"{host[1]}0", f"{host[1]}1"
            )
        )
    with pytest.raises(InstanceError) as err:
        instance_from_nvidia_smi({"n1": [tmp_path / "n1.txt"], "n2": [tmp_path / "n2.txt"]})
    assert str(err.value) == "n2: the hosts so far have 4 GPUs, more than the limit of 3 (docs/limits.md)"


def test_a_listing_of_many_gpus_is_read_in_one_pass(tmp_path: Path) -> None:
    """20,000 GPUs with a MIG device each (the duplicate-index check was quadratic: 40 s at 5,000
    GPUs; benchmarks/bench_import.py measures 50,000)."""
    lines = []
    for i in range(20_000):
        lines += [
            f"GPU {i}: NVIDIA A100-SXM4-40GB (UUID: GPU-{i:08x})",
            f"  MIG 7g.40gb Device 0: (UUID: MIG-{i:08x})",
        ]
    lgi = "| GPU instances: |\n|====|\n" + "".join(
        f"|   {i}  MIG 7g.40gb   0   0   0:8   |\n" for i in range(20_000)
    )
    inst = imported(tmp_path, {"L.txt": "\n".join(lines) + "\n", "lgi.txt": lgi})
    assert len(inst.gpus) == 20_000 and len(inst.workloads) == 20_000  # type: ignore[attr-defined]
    duplicate = "\n".join([*lines[:4], "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-ff)"]) + "\n"
    assert refusal(tmp_path, {"L.txt": duplicate}) == (
        "L.txt:5: expected one line per GPU index (GPU 0 is on line 1), got 'GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-ff)'"
    )


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"L.txt": b"GPU 0: A100 caf\xe9 (UUID: GPU-2)\n"},
            "L.txt:1: byte 0xe9 at column 16 is not UTF-8 text",
        ),
        (
            {"lgi.txt": LGI.replace(LGI_ROW, "|   0  MIG 1g.10gb      19        1          4:1     |")},
            "lgi.txt:6: GPU",
        ),
    ],
)
def test_the_command_exits_2_in_one_line(
    tmp_path: Path, capsys: Capsys, files: dict[str, str | bytes], message: str
) -> None:
    paths = []
    for name, content in files.items():
        (tmp_path / name).write_bytes(content.encode() if isinstance(content, str) else content)
        paths.append(str(tmp_path / name))
    assert main(["import", "nvidia-smi", "--gpu-model", "A100-40GB", "--host", "n1", *paths]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"mipopt: error: {tmp_path}/{message}")


# --- fuzz: the recorded outputs with one thing changed, and raw bytes

NUMBER = re.compile(r"\d+")
NAME = re.compile(r"\b\d+g\.\d+gb(?:\+me)?\b")

HOSTILE = st.sampled_from(
    [
        "",
        "-",
        "\x00",
        "\x1b[2J",
        "\u202e",
        "\ud800",
        "²",
        "1e400",
        "9" * 5000,
        "x" * 100_000,
        "\n",
        "\r\n",
        "|",
        "+---+",
    ]
)
NUMBERS = st.one_of(
    st.integers(min_value=0, max_value=10**12).map(str), st.sampled_from(["9" * 30, "0" * 12, "-1"])
)
NAMES = st.one_of(
    st.sampled_from(["1g.5gb", "1g.10gb", "7g.80gb", "3g.39gb", "1g.5gb+me", "9g.9gb"]), HOSTILE
)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    """A recorded output with one line, number or name changed: (file name, text)."""
    name = draw(st.sampled_from(sorted(TEXTS)))
    lines = TEXTS[name].splitlines()
    k = draw(st.integers(min_value=0, max_value=len(lines) - 1))
    how = draw(st.sampled_from(["replace", "double", "drop", "huge", "number", "name", "text"]))
    if how == "replace":
        lines[k] = draw(st.one_of(HOSTILE, st.sampled_from(lines)))
    elif how == "double":
        lines.insert(k, lines[k])
    elif how == "drop":
        del lines[k]
    elif how == "huge":
        lines[k] = lines[k] + "x" * draw(st.sampled_from([1000, 100_000]))
    elif how == "number" and NUMBER.search(lines[k]):
        spots = list(NUMBER.finditer(lines[k]))
        spot = spots[draw(st.integers(min_value=0, max_value=len(spots) - 1))]
        lines[k] = lines[k][: spot.start()] + draw(NUMBERS) + lines[k][spot.end() :]
    elif how == "name" and NAME.search(lines[k]):
        lines[k] = NAME.sub(draw(NAMES), lines[k], count=1)
    else:
        lines[k] = draw(st.text(max_size=80))
    return name, "\n".join(lines) + "\n"


FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
WORK = Path(tempfile.mkdtemp(prefix="mipopt-nvidia-smi-fuzz-"))


@FUZZ
@given(mutated())
def test_a_mutated_output_is_read_or_refused_in_one_line(case: tuple[str, str]) -> None:
    name, text = case
    parse = PARSERS.get(_form(text))
    if parse is not None:  # the parser alone, then the whole import
        try:
            parse(text, name)
        except InstanceError as err:
            assert_one_line(err)
    try:
        imported(WORK, {name: text.encode("utf-8", "surrogatepass")}, gpu_model="A100-40GB")
    except InstanceError as err:
        assert_one_line(err)


@FUZZ
@given(st.binary(max_size=400), st.sampled_from(sorted(TEXTS)))
def test_raw_bytes_are_read_or_refused_in_one_line(data: bytes, name: str) -> None:
    for content in (data, TEXTS[name].encode()[: len(data)] + data):
        try:
            imported(WORK, {"out.txt": content}, gpu_model="A100-40GB")
        except InstanceError as err:
            assert_one_line(err)


def _form(text: str) -> str:
    try:
        return detect(text, "f")
    except InstanceError:
        return ""


def test_a_lone_surrogate_in_xml_text_is_one_line() -> None:
    """Text handed to the XML reader (not a file, which is decoded first) with a lone surrogate:
    expat cannot take it as UTF-8 (hypothesis found the UnicodeEncodeError)."""
    from mipopt.interop.nvidia_smi import parse_query_xml

    with pytest.raises(InstanceError) as err:
        parse_query_xml("<nvidia_smi_log>\n\ud800</nvidia_smi_log>\n", "q.xml")
    assert str(err.value) == "q.xml:2: expected well-formed nvidia-smi -q -x XML, got 'a lone surrogate'"
