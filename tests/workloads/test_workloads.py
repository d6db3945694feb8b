"""Generated workloads: the IBM WPM set-up (``mipopt.workloads.ibm_instance``, ``mipopt generate ibm``)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mipopt.catalog import get_model
from mipopt.cli import main
from mipopt.exact.driver import solve_exact
from mipopt.instance import Instance, instance_to_dict
from mipopt.io import load_instance
from mipopt.verifier import verify
from mipopt.workloads import ibm_instance

A100 = get_model("A100-80GB")
TABLE_1 = {"7g.80gb", "4g.40gb", "3g.40gb", "2g.20gb", "1g.20gb", "1g.10gb", "1g.10gb+me"}

Capsys = pytest.CaptureFixture[str]


def _compute(inst: Instance, running: bool) -> int:
    return sum(A100.profile(w.profile).compute for w in inst.workloads if w.running == running)


def _used_gpus(inst: Instance) -> set[str]:
    return {w.placement.gpu for w in inst.running if w.placement is not None}


@pytest.fixture(scope="module")
def big() -> Instance:
    return ibm_instance(400, seed=7)


def test_same_seed_same_instance_other_seed_another() -> None:
    a, b = ibm_instance(80, seed=3), ibm_instance(80, seed=3)
    assert a == b
    assert json.dumps(instance_to_dict(a)) == json.dumps(instance_to_dict(b))
    c = ibm_instance(80, seed=4)
    assert instance_to_dict(c)["workloads"] != instance_to_dict(a)["workloads"]


def test_hosts_of_eight_gpus_with_readable_ids(big: Instance) -> None:
    assert len(big.gpus) == 400
    assert [h.id for h in big.hosts] == [f"h{j:03d}" for j in range(50)]
    assert all(h.gpus == tuple(f"{h.id}-g{k}" for k in range(8)) for h in big.hosts)
    assert all(g.model.name == "A100-80GB" for g in big.gpus)
    assert [w.id for w in big.running] == [f"run{i:04d}" for i in range(1, len(big.running) + 1)]
    assert [w.id for w in big.new] == [f"new{i:04d}" for i in range(1, len(big.new) + 1)]
    assert big.name == "ibm-400gpus-seed7"


def test_last_host_holds_the_remainder() -> None:
    inst = ibm_instance(20, seed=0)
    assert [len(h.gpus) for h in inst.hosts] == [8, 8, 4]
    assert inst.hosts[2].gpus == ("h002-g0", "h002-g1", "h002-g2", "h002-g3")
    # hosts get capacity in proportion to their GPUs: 0.9 x GPUs x 7 slices x 4 cpu, 0.9 x GPUs x 80 GB
    assert [(h.cpu, h.ram_gb) for h in inst.hosts] == [(202.0, 576.0), (202.0, 576.0), (101.0, 288.0)]


def test_about_sixty_percent_of_gpus_used(big: Instance) -> None:
    used = _used_gpus(big)
    assert abs(len(used) - 240) <= 4  # round(0.6 x 400); a full host can leave a drawn GPU empty
    per_gpu = Counter(w.placement.gpu for w in big.running if w.placement is not None)
    compute = defaultdict(int)
    for w in big.running:
        assert w.placement is not None
        compute[w.placement.gpu] += A100.profile(w.profile).compute
    assert max(compute.values()) <= 7
    # utilization is drawn from 1..7 slices per GPU: a spread, not one level
    assert len(set(compute.values())) >= 6
    assert max(per_gpu.values()) >= 4


def test_running_layouts_are_legal_and_diverse(big: Instance) -> None:
    # The Instance checked every rule when built; check the slots once more, independently.
    slots: dict[str, set[int]] = defaultdict(set)
    media: Counter[str] = Counter()
    for w in big.running:
        assert w.placement is not None
        p = A100.profile(w.profile)
        assert w.placement.start in p.starts
        span = set(range(w.placement.start, w.placement.start + p.memory_slots))
        assert not span & slots[w.placement.gpu]
        slots[w.placement.gpu] |= span
        media[w.placement.gpu] += p.media_extension
    assert max(media.values()) == 1
    assert {w.profile for w in big.running} == TABLE_1
    assert {w.profile for w in big.new} == TABLE_1
    # random legal starts, not always the driver's preferred one: 1g.10gb lands on many slots
    assert len({w.placement.start for w in big.running if w.profile == "1g.10gb" and w.placement}) == 7


def test_new_workloads_worth_sixty_percent_of_the_cluster_compute(big: Instance) -> None:
    assert _compute(big, running=False) == round(0.6 * 400 * 7) == 1680
    free = ibm_instance(400, seed=7, load=0.5, load_basis="free")
    assert _compute(free, running=False) == round(0.5 * (2800 - _compute(free, running=True)))
    # the running workloads are drawn before the new ones, so they do not depend on the load
    assert free.running == big.running


def test_demands_and_weights_are_functions_of_the_profile(big: Instance) -> None:
    by_profile: dict[str, set[tuple[float, float, float, float]]] = defaultdict(set)
    for w in big.workloads:
        by_profile[str(w.profile)].add((w.cpu, w.ram_gb, w.weight, w.migration_weight))
    assert {p: s.pop() for p, s in by_profile.items() if len(s) == 1} == {
        "7g.80gb": (28.0, 80.0, 7.0, 8.0),
        "4g.40gb": (16.0, 40.0, 4.0, 4.0),
        "3g.40gb": (12.0, 40.0, 3.0, 4.0),
        "2g.20gb": (8.0, 20.0, 2.0, 2.0),
        "1g.20gb": (4.0, 20.0, 1.0, 2.0),
        "1g.10gb": (4.0, 10.0, 1.0, 1.0),
        "1g.10gb+me": (4.0, 10.0, 1.0, 1.0),
    }
    unit = ibm_instance(8, seed=0, weights="unit", host_fraction=None)
    assert {(w.weight, w.migration_weight) for w in unit.workloads} == {(1.0, 1.0)}
    assert {(h.cpu, h.ram_gb) for h in unit.hosts} == {(None, None)}


def test_running_workloads_movable_unless_pinned_fraction() -> None:
    inst = ibm_instance(80, seed=1)
    assert not any(w.pinned for w in inst.workloads)
    pinned = ibm_instance(80, seed=1, pinned_fraction=0.25)
    assert sum(w.pinned for w in pinned.workloads) == round(0.25 * len(pinned.running))
    assert [w.placement for w in pinned.running] == [w.placement for w in inst.running]


def test_empty_and_full_extremes() -> None:
    none_used = ibm_instance(16, seed=2, used_fraction=0.0, load=0.0)
    assert (len(none_used.running), len(none_used.new)) == (0, 0)
    all_used = ibm_instance(16, seed=2, used_fraction=1.0, host_fraction=None)
    assert len(_used_gpus(all_used)) == 16


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 40),
    per_host=st.integers(1, 9),
    seed=st.integers(0, 2**32),
    used=st.floats(0, 1),
    load=st.floats(0, 1),
)
def test_any_arguments_give_a_valid_instance_of_the_asked_shape(
    n: int, per_host: int, seed: int, used: float, load: float
) -> None:
    inst = ibm_instance(n, seed=seed, used_fraction=used, load=load, gpus_per_host=per_host)
    assert len(inst.gpus) == n and len(inst.hosts) == -(-n // per_host)
    assert len(_used_gpus(inst)) <= round(used * n)
    assert _compute(inst, running=False) == round(load * n * 7)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_gpus": 0}, "n_gpus must be an integer of at least 1, got 0"),
        ({"used_fraction": 1.2}, "used_fraction must be in [0, 1], got 1.2"),
        ({"load": -0.1}, "load must be in [0, 1], got -0.1"),
        ({"pinned_fraction": float("nan")}, "pinned_fraction must be in [0, 1], got nan"),
        ({"gpus_per_host": 0}, "gpus_per_host must be an integer of at least 1, got 0"),
        ({"seed": -1}, "seed must be a non-negative integer, got -1"),
        ({"load_basis": "total"}, "load_basis must be 'cluster' or 'free', got 'total'"),
        ({"profiles": ["5g.50gb"]}, "profiles: '5g.50gb' is not a profile of A100-80GB"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"n_gpus": 8, "seed": 0, **kwargs}
    with pytest.raises(ValueError) as err:
        ibm_instance(**args)  # type: ignore[arg-type]
    assert str(err.value) == message


def test_generated_instance_solves_to_a_verified_optimum() -> None:
    inst = ibm_instance(8, seed=0)
    sol = solve_exact(inst, solver="highs")
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert sol.status.value == "optimal"
    placed = sol.placed()
    assert all(w.id in placed for w in inst.running)
    # acceptance counts placed compute slices: all running ones plus the new ones placed
    running = _compute(inst, running=True)
    assert running < report.objectives.acceptance <= min(running + _compute(inst, running=False), 56)


# --- command line


def run(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_generate_round_trip(tmp_path: Path, capsys: Capsys) -> None:
    path = tmp_path / "ibm80.json"
    code, out, err = run(capsys, "generate", "ibm", "--gpus", "80", "--seed", "5", "--out", str(path))
    assert (code, err) == (0, "")
    inst = load_instance(path)
    assert inst == ibm_instance(80, seed=5)
    used = len(_used_gpus(inst))
    assert out == (
        f"wrote {path}: 'ibm-80gpus-seed5': 10 hosts, 80 GPUs ({used} used), "
        f"{len(inst.running)} running and {len(inst.new)} new workloads\n"
    )
    code, out, err = run(capsys, "validate", str(path))
    assert (code, err) == (0, "")
    assert out.startswith(f"{path}: valid instance 'ibm-80gpus-seed5': 10 hosts, 80 GPUs, ")
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, no leftovers


def test_cli_generate_options_and_stdout(capsys: Capsys) -> None:
    code, out, err = run(
        capsys, "generate", "ibm", "--gpus", "12", "--seed", "2", "--used", "0.5", "--load", "0.3",
        "--pinned", "1", "--gpus-per-host", "4", "--model", "H100-80GB",
    )  # fmt: skip
    assert (code, err) == (0, "")
    data = json.loads(out)
    expected = ibm_instance(
        12, seed=2, used_fraction=0.5, load=0.3, pinned_fraction=1.0, gpus_per_host=4, model="H100-80GB"
    )
    assert data == instance_to_dict(expected)
    assert [len(h["gpus"]) for h in data["hosts"]] == [4, 4, 4]
    assert all(w.get("pinned") for w in data["workloads"] if "placement" in w)


def test_cli_generate_unknown_model_exits_2(tmp_path: Path, capsys: Capsys) -> None:
    out_file = tmp_path / "x.json"
    code, out, err = run(capsys, "generate", "ibm", "--gpus", "8", "--model", "Z9", "--out", str(out_file))
    assert (code, out) == (2, "")
    assert err.startswith("mipopt: error: --model: unknown GPU model 'Z9' (known: ")
    assert err.count("\n") == 1
    assert not out_file.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--gpus", "-3"], "--gpus: must be at least 1, got -3"),
        (["--gpus", "8", "--used", "1.5"], "--used: must be a fraction in [0, 1], got 1.5"),
        (["--gpus", "8", "--load", "-0.2"], "--load: must be a fraction in [0, 1], got -0.2"),
        (["--gpus", "8", "--pinned", "nan"], "--pinned: must be a fraction in [0, 1], got nan"),
        (["--gpus", "8", "--seed", "-1"], "--seed: must be non-negative, got -1"),
        (["--gpus", "8", "--gpus-per-host", "0"], "--gpus-per-host: must be at least 1, got 0"),
    ],
)
def test_cli_generate_option_rules_are_checked_while_parsing(
    tmp_path: Path, capsys: Capsys, argv: list[str], message: str
) -> None:
    out_file = tmp_path / "x.json"
    with pytest.raises(SystemExit) as exit_:
        main(["generate", "ibm", *argv, "--out", str(out_file)])
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert (out, err.splitlines()[-1]) == ("", f"mipopt generate ibm: error: argument {message}")
    assert not out_file.exists()
