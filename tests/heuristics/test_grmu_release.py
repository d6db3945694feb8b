"""GRMU's ``release`` option: whether a GPU emptied by a departure goes back to the pool."""

from __future__ import annotations

import pytest

from mipopt.heuristics.grmu import Grmu
from mipopt.heuristics.policies import make_policy
from mipopt.instance import InstanceBuilder
from mipopt.simulation import Request, Trace, simulate


def emptied_heavy_trace() -> Trace:
    """Three A100-40GB GPUs; heavy 34 % rounds to one GPU: g0 heavy, g1 light, g2 pool.

    ``x`` (7g) holds the heavy g0 until 1. ``y`` (4g) takes the light g1; ``z`` (4g, at 2)
    cannot share it (4g starts only at 0) and takes the first pool GPU: g0 if it went back
    to the pool when ``x`` left, else g2. ``w`` (7g, at 3) then finds its heavy basket: g2
    taken from the pool, or the empty g0 that stayed heavy.
    """
    b = InstanceBuilder("release")
    b.add_host("h0", {"g0": "A100-40GB", "g1": "A100-40GB", "g2": "A100-40GB"})
    requests = (
        Request("x", "7g.40gb", 0.0, 1.0),
        Request("y", "4g.20gb", 0.1, 10.0),
        Request("z", "4g.20gb", 2.0, 10.0),
        Request("w", "7g.40gb", 3.0, 10.0),
    )
    return Trace("release", b.build(), requests, time_unit="h")


@pytest.mark.parametrize(
    ("spec", "z_gpu", "w_gpu"),
    [("grmu:heavy=0.34", "g0", "g2"), ("grmu:heavy=0.34,release=false", "g2", "g0")],
)
def test_an_emptied_gpu_goes_back_to_the_pool_unless_release_is_false(
    spec: str, z_gpu: str, w_gpu: str
) -> None:
    res = simulate(emptied_heavy_trace(), make_policy(spec), debug=True)
    assert res.summary["accepted"] == 4
    assert {wid: at[0] for wid, at in res.placed.items()} == {"y": "g1", "z": z_gpu, "w": w_gpu}


def test_release_defaults_to_true() -> None:
    assert Grmu().release is True and Grmu(release=False).release is False
    assert make_policy("grmu:release=false").release is False  # type: ignore[attr-defined]
