"""The synthetic liballprof trace the benchmarks ingest (``write_liballprof``) is the program
of :func:`stencil_graph`: same messages, same per-rank compute (imbalance and noise), same seed
same files, and ingest reads it without a warning."""

from __future__ import annotations

import numpy as np
import pytest

from llamp.errors import InputError
from llamp.graph import RECV, SEND
from llamp.ingest import read
from llamp.ingest.synthetic import stencil_graph, write_liballprof

PATTERN = {"ranks": 8, "iterations": 30, "alltoall_every": 10, "allreduce_every": 2, "seed": 7}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("stencil") / "trace"
    lines = write_liballprof(path, **PATTERN)
    return path, lines


def test_the_trace_has_every_call_of_the_pattern(trace):
    path, lines = trace
    P, n, K = 8, 30, 4  # 2-D grid: four neighbours
    per_iteration = 2 * K + 1  # Irecv, Isend per neighbour; one Waitall
    collectives = n // 2 + n // 10  # Allreduce every 2nd, Alltoall every 10th iteration
    assert lines == P * (2 + n * per_iteration + collectives)  # + Init, Finalize
    text = (path / "pmpi-trace-rank-0.txt").read_text()
    assert text.count("MPI_Alltoall:") == 3 and text.count("MPI_Allreduce:") == 15


def test_its_graph_has_the_messages_and_compute_of_the_stencil_graph(trace):
    graph = read(trace[0])
    reference = stencil_graph(**PATTERN)
    assert not graph.meta["warnings"]
    assert graph.summary().messages == reference.summary().messages
    assert graph.summary().bytes == reference.summary().bytes
    assert np.count_nonzero(graph.kind == SEND) == np.count_nonzero(reference.kind == SEND)
    assert np.count_nonzero(graph.kind == RECV) == np.count_nonzero(reference.kind == RECV)
    # Per-rank compute (load imbalance, noise) as drawn for the graph; the trace rounds to ns
    # and ends with a 1 µs gap before MPI_Finalize.
    ingested = np.array(graph.summary().calc_ns_per_rank)
    drawn = np.array(reference.summary().calc_ns_per_rank)
    np.testing.assert_allclose(ingested, drawn, atol=1_000.0 + 30 * 10 * 1.0)
    assert ingested.std() > 0.05 * ingested.mean()  # the 10 % imbalance is there


def test_same_seed_same_trace_other_seed_other_trace(trace, tmp_path):
    write_liballprof(tmp_path / "again", **PATTERN)
    write_liballprof(tmp_path / "other", **(PATTERN | {"seed": 8}))
    first = (trace[0] / "pmpi-trace-rank-5.txt").read_text()
    assert (tmp_path / "again" / "pmpi-trace-rank-5.txt").read_text() == first
    assert (tmp_path / "other" / "pmpi-trace-rank-5.txt").read_text() != first


def test_a_pattern_without_ranks_is_refused(tmp_path):
    with pytest.raises(InputError, match="at least 2 ranks"):
        write_liballprof(tmp_path / "t", ranks=1)
