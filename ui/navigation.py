"""The UI's page registry: adding a page is one script under ``views/`` plus one line here.

A page analysing a run starts with ``sel = controls.selection("<page>")``, which renders the shared
run and LogGPS controls in the sidebar and returns the choice.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageSpec:
    """One page: its script (relative to ``app.py``), title, Material icon and menu section."""

    path: str
    title: str
    icon: str
    section: str
    default: bool = False


PAGES: tuple[PageSpec, ...] = (
    PageSpec("views/runs.py", "Runs", ":material/database:", "Data", default=True),
    PageSpec("views/latency.py", "Latency", ":material/timeline:", "Analyses"),
    PageSpec("views/critical_path.py", "Critical path", ":material/route:", "Analyses"),
    PageSpec("views/compare.py", "Compare runs", ":material/compare_arrows:", "Analyses"),
    PageSpec("views/region.py", "Design space", ":material/stacked_line_chart:", "Network"),
    PageSpec("views/collectives.py", "Collectives what-if", ":material/call_split:", "Application"),
    PageSpec("views/classification.py", "Classification", ":material/category:", "Application"),
    PageSpec("views/variability.py", "Variability", ":material/scatter_plot:", "Application"),
    PageSpec("views/topology.py", "Topology what-if", ":material/hub:", "Network"),
    PageSpec("views/matrices.py", "Sensitivity matrices", ":material/grid_on:", "Network"),
    PageSpec("views/placement.py", "Placement", ":material/swap_horiz:", "Network"),
    PageSpec("views/study.py", "Studies", ":material/table_chart:", "Analyses"),
    PageSpec("views/cypher.py", "Cypher console", ":material/terminal:", "Query"),
    PageSpec("views/validation.py", "Validation", ":material/fact_check:", "Analyses"),
)
