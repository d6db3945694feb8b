"""The dense class (issue 26): few hosts of many GPUs whose cpu and ram bind."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from mipopt.cli import main
from mipopt.exact.driver import solve_exact
from mipopt.geometry import default_start
from mipopt.instance import Status, instance_to_dict
from mipopt.verifier import verify
from mipopt.workloads import dense_instance
from mipopt.workloads.dense import DENSE_CPU, DENSE_RAM_GB


def test_the_same_seed_gives_the_same_instance_and_another_seed_another() -> None:
    a, b = dense_instance(5, seed=3), dense_instance(5, seed=3)
    assert instance_to_dict(a) == instance_to_dict(b)
    assert instance_to_dict(a) != instance_to_dict(dense_instance(5, seed=4))


@pytest.mark.parametrize("models", [("A100-80GB",), ("A100-40GB", "H100-80GB"), ("A30-24GB", "A100-80GB")])
def test_the_choices_the_docstring_names(models: tuple[str, ...]) -> None:
    inst = dense_instance(6, seed=1, gpus_per_host=4, models=models)
    assert [len(h.gpus) for h in inst.hosts] == [4] * 6
    for h in inst.hosts:  # models alternate on every host; capacities and weights from their sets
        assert [inst.gpu(g).model.name for g in h.gpus] == [models[i % len(models)] for i in range(4)]
        assert h.cpu in DENSE_CPU and h.ram_gb in DENSE_RAM_GB and h.weight in (1.0, 2.0)
    per_gpu = Counter(w.placement.gpu for w in inst.running if w.placement)
    assert set(per_gpu.values()) <= {1, 2, 3, 4}
    for h in inst.hosts:  # the running ones fit their host
        mine = [w for w in inst.running if w.placement and inst.gpu(w.placement.gpu).host == h.id]
        assert sum(w.cpu for w in mine) <= h.cpu and sum(w.ram_gb for w in mine) <= h.ram_gb
    for w in inst.running:
        assert 2 <= w.cpu <= 8 and w.ram_gb in (8, 16, 24, 32) and w.migration_weight in (1.0, 0.5)
    for w in inst.new:
        assert 2 <= w.cpu <= 16 and w.ram_gb in range(8, 65, 8) and w.weight in (1.0, 2.0, 3.0)


def test_running_workloads_sit_at_the_drivers_default_starts() -> None:
    """Replayed in id order per GPU, each running workload is where the driver puts it by default."""
    inst = dense_instance(5, seed=2)
    masks: dict[str, int] = Counter()
    for w in sorted(inst.running, key=lambda w: w.id):
        assert w.placement is not None
        model = inst.gpu(w.placement.gpu).model
        profile = model.find(w.profile)  # type: ignore[arg-type]
        assert profile is not None
        assert default_start(model, masks[w.placement.gpu], profile) == w.placement.start
        masks[w.placement.gpu] |= profile.slot_mask(w.placement.start)


def test_shares_and_load() -> None:
    inst = dense_instance(8, seed=0, pinned_share=0.3, load=0.7)
    pinned = sum(w.pinned for w in inst.running) / len(inst.running)
    assert 0.1 < pinned < 0.5
    slots = sum(min(p.memory_slots for g in inst.gpus if (p := g.model.find(w.profile))) for w in inst.new)  # type: ignore[arg-type]
    cluster = sum(g.model.slots for g in inst.gpus)
    assert 0.7 * cluster <= slots < 0.7 * cluster + 8
    none = dense_instance(3, seed=0, used_share=0.0, restricted_share=1.0)
    assert not none.running and all(w.gpu_models is not None and len(w.gpu_models) == 1 for w in none.new)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hosts": 0}, "hosts must be an integer of at least 1, got 0"),
        ({"hosts": 2, "gpus_per_host": 0}, "gpus_per_host must be an integer of at least 1, got 0"),
        ({"hosts": 2, "load": 0.0}, "load must be in (0, 1], got 0.0"),
        ({"hosts": 2, "pinned_share": 1.5}, "pinned_share must be in [0, 1], got 1.5"),
        ({"hosts": 2, "models": ()}, "models must name one or two GPU models, got []"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict[str, object], message: str) -> None:
    hosts = kwargs.pop("hosts")
    with pytest.raises(ValueError) as err:
        dense_instance(hosts, seed=0, **kwargs)  # type: ignore[arg-type]
    assert str(err.value) == message


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_small_dense_instances_have_equal_optima_in_the_three_models(seed: int) -> None:
    inst = dense_instance(2, seed=seed, gpus_per_host=2, models=("A100-40GB", "H100-80GB"))
    found = {}
    for model in ("grmu", "grmu-slots", "grmu-paper"):
        sol = solve_exact(inst, model=model)
        report = verify(inst, sol)
        assert report.valid, report.violations
        assert sol.status is Status.OPTIMAL
        found[model] = report.objectives
    assert found["grmu"] == found["grmu-slots"] == found["grmu-paper"]


def test_the_cli_writes_it_and_refuses_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d.json"
    argv = ["generate", "dense", "--hosts", "3", "--gpus-per-host", "4", "--seed", "5"]
    assert main([*argv, "--models", "A100-40GB,H100-80GB", "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: 'dense-3x4-seed5': 3 hosts, 12 GPUs")
    data = json.loads(out.read_text())
    assert data == instance_to_dict(
        dense_instance(3, seed=5, gpus_per_host=4, models=("A100-40GB", "H100-80GB"))
    )
    assert main([*argv, "--models", "A100-40GB,H100-80GB,A30-24GB"]) == 2
    assert capsys.readouterr().err == "mipopt: error: --models: one or two GPU models, got 3\n"
    assert main(["generate", "dense", "--hosts", "20000"]) == 2
    assert capsys.readouterr().err == (
        "mipopt: error: --hosts x --gpus-per-host: 160,000 GPUs, more than the limit of 100,000 (docs/limits.md)\n"
    )
