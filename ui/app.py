"""Entry point of the llamp web UI: ``llamp ui`` runs ``streamlit run`` on this file.

Navigation comes from :data:`llamp.ui.navigation.PAGES`. Each page renders what it needs
(analysis pages call :func:`llamp.ui.controls.selection` for the shared sidebar controls), so a
page also runs on its own, e.g. under ``AppTest``.
"""

import streamlit as st

from llamp.ui.navigation import PAGES

st.set_page_config(page_title="llamp", page_icon=":material/network_check:", layout="wide")

sections: dict[str, list] = {}
for spec in PAGES:
    page = st.Page(spec.path, title=spec.title, icon=spec.icon, default=spec.default)
    sections.setdefault(spec.section, []).append(page)

st.navigation(sections, expanded=True).run()  # every page visible (more than the default 10)
