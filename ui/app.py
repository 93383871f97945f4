"""Entry point of the llamp web UI: ``llamp ui`` runs ``streamlit run`` on this file.

Navigation comes from :data:`llamp.ui.navigation.PAGES`. Each page renders what it needs
(analysis pages call :func:`llamp.ui.controls.selection` for the shared sidebar controls), so a
page also runs on its own, e.g. under ``AppTest``.
"""

from pathlib import Path

import streamlit as st

from llamp.ui import controls, tasks
from llamp.ui.navigation import PAGES

#: The browser tab's icon: an emoji, which the page draws itself.
FAVICON = "📶"


sections: dict[str, list] = {}
by_name: dict[str, st.Page] = {}
for spec in PAGES:
    page = st.Page(spec.path, title=spec.title, icon=spec.icon, default=spec.default)
    sections.setdefault(spec.section, []).append(page)
    by_name[Path(spec.path).stem] = page  # runs, latency, critical_path, …

current = st.navigation(sections, expanded=True)  # every page visible (more than the default 10)
# After the navigation, whose page icons would otherwise be the tab's icon: a Material icon as a
# favicon is fetched from fonts.gstatic.com, an emoji is drawn in the page (no request leaves).
st.set_page_config(page_title="llamp", page_icon=FAVICON, layout="wide")
name = next((n for n, p in by_name.items() if p.url_path == current.url_path), "")
seen = st.session_state.setdefault("_url_seen", {})
wanted = st.query_params.get("page")
if wanted in by_name and wanted != name and wanted != seen.get("page"):
    seen["page"] = wanted  # ?page=critical_path&… (a link, a bookmark) opens that page once
    st.switch_page(by_name[wanted], query_params=st.query_params.to_dict())
controls.take_url()  # ?run=…&L=… holds on whichever page it opened
tasks.visit(name)  # the work of the page this session left stops, but for its jobs
running = tasks.jobs()
if running:
    with st.sidebar.container(key="jobs"):
        st.caption(
            f"{len(running)} analysis job{'s' * (len(running) > 1)} running: each goes on when "
            "you leave its page, and its result is stored for every session."
        )
        for job in running:
            st.caption(tasks.describe(job))
seen["page"] = name
if st.query_params.get("page") != name:
    st.query_params["page"] = name
current.run()
