"""The UI's page registry: adding a page is one script under ``views/`` plus one line here.

A page analysing a run starts with ``sel = controls.selection("<page>")``, which renders the shared
run and LogGPS controls in the sidebar and returns the choice.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageSpec:
    """One page: its script (relative to ``app.py``), title, icon and menu section.

    Icons are emoji: the browser draws a page's icon as the tab's icon, and a Material icon
    there is fetched from fonts.gstatic.com (the UI asks nothing of another machine)."""

    path: str
    title: str
    icon: str
    section: str
    default: bool = False


PAGES: tuple[PageSpec, ...] = (
    PageSpec("views/runs.py", "Runs", "🗄️", "Data", default=True),
    PageSpec("views/latency.py", "Latency", "⏱️", "Analyses"),
    PageSpec("views/critical_path.py", "Critical path", "🛤️", "Analyses"),
    PageSpec("views/compare.py", "Compare runs", "⚖️", "Analyses"),
    PageSpec("views/region.py", "Design space", "🗺️", "Network"),
    PageSpec("views/collectives.py", "Collectives what-if", "🔀", "Application"),
    PageSpec("views/classification.py", "Classification", "🏷️", "Application"),
    PageSpec("views/variability.py", "Variability", "🎲", "Application"),
    PageSpec("views/topology.py", "Topology what-if", "🕸️", "Network"),
    PageSpec("views/matrices.py", "Sensitivity matrices", "🔢", "Network"),
    PageSpec("views/placement.py", "Placement", "🔁", "Network"),
    PageSpec("views/parallel_groups.py", "Parallel groups", "🧩", "Network"),
    PageSpec("views/study.py", "Studies", "📋", "Analyses"),
    PageSpec("views/cypher.py", "Cypher console", "⌨️", "Query"),
    PageSpec("views/validation.py", "Validation", "✅", "Analyses"),
)
