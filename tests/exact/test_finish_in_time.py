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


class _Left:
    """The driver's run as the portfolio sees it: ``seconds`` left, never stopped."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def left(self) -> float:
        return self.seconds

    def stopped(self) -> None:
        return None


@pytest.mark.parametrize(("estimate", "ran"), [(3.0, ["ff", "mfi"]), (6.0, ["ff", "mfi"]), (9.0, [])])
def test_the_first_heuristic_may_take_most_of_the_time_left(
    monkeypatch: pytest.MonkeyPatch, estimate: float, ran: list[str]
) -> None:
    """Of 10 s left, the first heuristic may take 8 (``FIRST_HEURISTIC_SHARE``), the others
    together 4 (``PORTFOLIO_SHARE``): an estimate of 6 s runs it (at 16,000 GPUs the answer had
    placed no new workload when 5 s was more than the portfolio's share), one of 9 s runs none."""
    inst = load_instance(ROOT / "instances" / "quickstart.json")
    monkeypatch.setattr(driver, "PORTFOLIO_S_PER_WORKLOAD", estimate / len(inst.workloads))
    called: list[str] = []

    def heuristic(name: str) -> driver.Heuristic:
        def run(instance: object) -> object:
            called.append(name)
            return solve(inst, name)

        return name, run  # type: ignore[return-value]

    portfolio = [heuristic("mfi"), heuristic("ff")]  # run last first: ff, then mfi at ff's pace
    placed = list(driver._portfolio(inst, portfolio, _Left(10.0)))  # type: ignore[arg-type]
    assert called == ran
    assert sorted(name for name, _, _ in placed) == sorted(ran)
