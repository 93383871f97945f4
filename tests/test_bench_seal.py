"""``bench_seal``: one column per graph file, the load with and without the checks and the
checks' parts (a small sealed graph; no timing is asserted beyond the parts fitting the load)."""

from __future__ import annotations

import json

from random_graphs import random_graph

from benchmarks import bench_seal
from llamp.lp.lowered import save_graph


def test_each_file_gets_the_load_with_and_without_its_checks(tmp_path, capsys):
    paths = []
    for seed, ranks in ((1, 4), (2, 8)):
        graph = random_graph(seed, ranks=ranks, steps=40, max_size=8192)
        paths.append(save_graph(graph, tmp_path / f"g{seed}.npz"))
    bench_seal.main(["--graph", *map(str, paths), "--repeat", "1", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert len(report["load_average"]) == 2
    first, second = report["files"]
    assert first["vertices"] < second["vertices"]
    for column in (first, second):
        parts = (
            column["of which: seal digests (in place of the CRC) s"]
            + column["of which: range checks of the columns s"]
            + column["of which: event-graph checks s"]
        )
        assert 0 < parts and column["load without the checks (numpy.load: zip CRC only) s"] > 0
        assert column["load with the checks (llamp, every array read) s"] > 0
    bench_seal.main(["--graph", *map(str, paths), "--repeat", "1"])
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("(load average") and "g1.npz" in table[1] and "g2.npz" in table[1]
