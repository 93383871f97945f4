"""llamp benchmarks (DESIGN §10): ``python -m benchmarks [--quick] [--only NAME] [--repeat N]``.

Each ``bench_*.py`` module exposes ``run(quick: bool, repeat: int) -> list[dict]``; every dict
is one table row with at least ``benchmark``, ``case``, ``metric``, ``value``, ``unit``
(``value`` is the median of ``repeat`` runs; ``runs`` lists them). The runner prints one table.
"""
