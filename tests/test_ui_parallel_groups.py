"""The Parallel groups page under AppTest: each placement of a 16-GPU training step's parallel
groups on a GPU machine, with the numbers of ``llamp place-groups`` (the registry's analysis),
run as a stored background job."""

from __future__ import annotations

import pandas as pd
import pytest
from apptest_pages import assert_clean, exact_ns, keyed, metric, page, table
from store_graphs import stored_home

from llamp.ingest import read
from llamp.ingest.training import TrainingStep, write_training
from llamp.lp.gpu_machine import GpuMachine
from llamp.lp.group_placement import compare_group_placements
from llamp.params import LogGPS

RUN = "llama-16"
MACHINE = "gpus=8,nics=8,nvlink=500ns:450GB/s,net=3us:400Gb/s"


@pytest.fixture(scope="module")
def step(tmp_path_factory):
    """A 16-GPU step (dp 2 × tp 4 × pp 2) read from its Chakra files."""
    path = tmp_path_factory.mktemp("step") / RUN
    write_training(path, TrainingStep(dp=2, tp=4, pp=2, layers=2, micro_batches=2,
                                      seq_len=256, hidden=512))  # fmt: skip
    return read(path)


@pytest.fixture(scope="module")
def home(tmp_path_factory, step, ui_store):
    """The store of these tests holds the training step (conftest's ``store_env`` uses it)."""
    with stored_home(tmp_path_factory, {RUN: step}, ui_store) as path:
        yield path


@pytest.fixture
def env(store_env):
    return store_env


def test_the_page_shows_each_placement_as_place_groups_computes_it(env, step):
    at = page("parallel_groups")
    assert_clean(at)
    assert not at.dataframe, "nothing runs before the button is pressed"
    at.text_area(key="pg_layouts").set_value("tp,dp,pp\npp,dp,tp").run()
    at.button(key="pg_run").click().run()
    assert_clean(at)
    expected = compare_group_placements(
        step, LogGPS(), GpuMachine.parse(MACHINE), [["tp", "dp", "pp"], ["pp", "dp", "tp"]]
    )
    shown = table(at, "inter_node_bytes")
    assert list(shown["mapping"]) == ["as traced", "tp,dp,pp", "pp,dp,tp"]
    pd.testing.assert_series_equal(
        shown["runtime_ns"].astype(float).reset_index(drop=True),
        expected.mappings["runtime_ns"],
        check_names=False,
        rtol=1e-12,
    )
    assert list(shown["inter_node_bytes"]) == list(expected.mappings["inter_node_bytes"])
    assert metric(at, f"Fastest: {expected.best}") is not None
    T_best = float(expected.mappings.set_index("mapping").loc[expected.best, "runtime_ns"])
    assert exact_ns(keyed(at, "pg-best")) == pytest.approx(T_best, abs=1e-5)
    dims = table(at, "dimension")
    assert sorted(dims["dimension"]) == ["dp", "pp", "tp"]

    # stored: a new session shows it at once, without pressing the button
    again = page("parallel_groups")
    again.text_area(key="pg_layouts").set_value("tp,dp,pp\npp,dp,tp").run()
    assert_clean(again)
    assert table(again, "inter_node_bytes")["runtime_ns"].tolist() == shown["runtime_ns"].tolist()


def test_a_bad_machine_is_a_readable_error(env):
    at = page("parallel_groups")
    at.text_input(key="pg_net_G").set_value("fast").run()
    assert not at.exception
    assert any("cannot read" in e.value for e in at.error), [e.value for e in at.error]
