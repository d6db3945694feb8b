"""Work that cannot finish in time is not started (issue 24): once the warm start's model is
built, a run whose time is up neither solves nor decodes it (at 16,000 GPUs its warm start,
translation and decoding took another 4 to 7 s after the deadline)."""

from __future__ import annotations

import pytest
from factories import ROOT

from mipopt.exact import driver
from mipopt.exact.driver import StageEvent
from mipopt.instance import Status, Termination
from mipopt.io import load_instance
from mipopt.registry import solve
from mipopt.solvers.stop import StopFlag
from mipopt.verifier import verify


def test_the_warm_start_model_is_not_solved_when_its_build_took_the_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inst = load_instance(ROOT / "instances" / "quickstart.json")  # running workloads: a warm start
    flag = StopFlag()
    get = driver._ConfigModels.get
    built: list[str] = []

    def build_then_time_is_up(self: driver._ConfigModels, label: str) -> object:
        found = get(self, label)
        if label in ("home", "keep"):
            built.append(label)
            flag.set()  # as a deadline passing while the model was built
        return found

    monkeypatch.setattr(driver._ConfigModels, "get", build_then_time_is_up)
    events: list[StageEvent] = []
    sol = solve(inst, stop=flag, progress=events.append)
    assert built == ["home"]
    assert events == []  # no stage started: the home model was neither solved nor decoded
    assert sol.termination is Termination.INTERRUPTED and sol.status is Status.FEASIBLE
    assert verify(inst, sol).valid
