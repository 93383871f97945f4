"""llamp benchmarks (docs/architecture.md §Performance targets): ``python -m benchmarks [--quick] [--full] [--only NAME]
[--repeat N] [--json FILE]``; results and the machine they were measured on in ``RESULTS.md``.

Each ``bench_*.py`` module exposes ``run(quick: bool, repeat: int) -> list[dict]`` (and may
take ``full: bool``: add the 10^7-vertex cases); every dict
is one table row with at least ``benchmark``, ``case``, ``metric``, ``value``, ``unit``
(``value`` is the median of ``repeat`` runs; ``runs`` lists them). The runner runs each module
in a fresh interpreter (so its peak-RSS rows are its own) and prints one table.
"""
