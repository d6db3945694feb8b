"""mipopt.examples: the repository's instances/*.json by name, from a checkout as from a wheel."""

from __future__ import annotations

import pytest
from factories import INSTANCES

import mipopt
from mipopt import examples
from mipopt.errors import InstanceError


def test_a_checkout_reads_the_examples_where_they_are() -> None:
    assert examples.folder() == INSTANCES.resolve()
    assert mipopt.examples is examples


def test_names_are_the_instances_and_the_targets_are_paths() -> None:
    files = sorted(p.stem for p in INSTANCES.glob("*.json"))
    assert examples.names() == [n for n in files if not n.endswith(".target")]
    assert "quickstart" in examples.names() and "swap.target" not in examples.names()
    assert [examples.path(n) for n in files] == [(INSTANCES / f"{n}.json").resolve() for n in files]


@pytest.mark.parametrize("name", examples.names())
def test_every_example_loads_as_its_file_does(name: str) -> None:
    assert examples.load(name) == mipopt.load_instance(INSTANCES / f"{name}.json")


def test_an_unknown_example_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(InstanceError) as info:
        examples.path("quickstart.json")
    known = ", ".join(sorted(p.stem for p in INSTANCES.glob("*.json")))
    assert str(info.value) == f"name: no example 'quickstart.json' (known: {known})"
