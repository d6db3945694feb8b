"""The cluster state: a Cluster changes only through place, remove and move."""

from __future__ import annotations

import pytest

import mipopt
from mipopt.state.cluster import Cluster


def test_a_cluster_refuses_plan_bookkeeping(fig2b: mipopt.Instance) -> None:
    cluster = Cluster(fig2b)
    w = fig2b.running[0]
    assert w.placement is not None
    spot = (w.placement.gpu, w.placement.start)
    for change in (cluster.hold, cluster.release):
        with pytest.raises(TypeError, match=r"^a Cluster changes only by place, remove and move"):
            change(w.id, spot)
    assert cluster.placed[w.id] == spot  # nothing changed
    assert cluster.remove(w) == spot and w.id not in cluster.placed
