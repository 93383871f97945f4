"""The llamp web UI (Streamlit, docs/architecture.md §UI): ``llamp ui`` serves :mod:`llamp.ui.app`.

Pages are scripts under ``views/`` registered in :mod:`llamp.ui.navigation` (not ``pages/``,
which Streamlit would also serve as legacy pages, bypassing the navigation); they share the
store access (:mod:`llamp.ui.store_access`), the pages' inputs and own computations
(:mod:`llamp.ui.page_work`), stored results and the in-process memo (:mod:`llamp.ui.stored`),
sidebar controls and the runner of page work (:mod:`llamp.ui.controls`) and figures
(:mod:`llamp.ui.plots`).
"""

from pathlib import Path

from llamp.ui import ast_guard

# Streamlit parses page scripts while background tasks run: one parse at a time (ast_guard).
ast_guard.install()

#: The Streamlit entry point that ``llamp ui`` runs.
APP_PATH = Path(__file__).with_name("app.py")
