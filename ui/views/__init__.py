"""Page scripts run by Streamlit (registered in :mod:`llamp.ui.navigation`)."""
