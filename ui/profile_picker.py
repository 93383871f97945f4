"""The sidebar's network-profile picker: a profile saved by ``llamp calibrate --save NAME``
(:mod:`llamp.injector.profiles`, ``$LLAMP_HOME/networks/NAME.json``) fills the L, o, G, S and g
inputs, as ``--network NAME`` does on the command line; the inputs stay editable.
"""

from __future__ import annotations

import streamlit as st

from llamp import config
from llamp.errors import LlampError
from llamp.params import LogGPS

#: The picker's first option: keep the parameters as typed.
NO_PROFILE = "— none: type L, o, G, S —"


def profile_inputs(params: LogGPS) -> dict[str, str]:
    """The sidebar's parameter texts for ``params``, exact (``repr`` of the ns values)."""
    return {
        "param_L": f"{params.L!r}ns",
        "param_o": f"{params.o!r}ns",
        "param_G": f"{params.G!r}ns/B",
        "param_S": str(int(params.S)),
        "param_g": f"{params.g!r}ns",
    }


def _apply(page: str) -> None:
    """on_change of the picker: write the profile into the kept values and into this page's
    inputs (allowed in a callback, which runs before the inputs are drawn again)."""
    from llamp.injector.profiles import load_profile

    name = st.session_state.get(f"network::{page}")
    st.session_state["_keep_network"] = name
    if not name or name == NO_PROFILE:
        return
    try:
        profile = load_profile(name)
    except LlampError as err:
        st.session_state["_network_error"] = f"Network profile {name!r}: {err}"
        return
    for key, text in profile_inputs(profile.params).items():
        st.session_state[f"_keep_{key}"] = text
        st.session_state[f"{key}::{page}"] = text


def profile_picker(page: str) -> None:
    """A select box of the saved network profiles (nothing when there is none)."""
    from llamp.injector.profiles import list_profiles, profiles_dir

    try:
        profiles = list_profiles()
    except (LlampError, OSError) as err:
        st.caption(f"Network profiles unavailable: {err}")
        return
    if not profiles:
        return
    names = [NO_PROFILE] + [p.name for p in profiles]
    kept = st.session_state.get("_keep_network", NO_PROFILE)
    st.selectbox(
        "Network profile",
        names,
        index=names.index(kept) if kept in names else 0,
        key=f"network::{page}",
        on_change=_apply,
        args=(page,),
        help=f"Calibrated with `llamp calibrate --save NAME` (in {profiles_dir()}); choosing one "
        "fills L, o, G, S and g below, which stay editable.",
    )
    error = st.session_state.pop("_network_error", None)
    if error:
        st.error(error)
    chosen = next((p for p in profiles if p.name == kept), None)
    if chosen is not None:
        p = chosen.params
        typed = {
            key: st.session_state.get(f"{key}::{page}", st.session_state.get(f"_keep_{key}"))
            for key in profile_inputs(p)
        }
        edited = " (edited below)" if typed != profile_inputs(p) else ""
        st.caption(
            f"{chosen.name}{edited}: L = {config.format_ns(p.L)}, o = {config.format_ns(p.o)}, "
            f"G = {p.G:.6g} ns/B" + (f" · {chosen.source}" if chosen.source else "")
        )


__all__ = ["NO_PROFILE", "profile_inputs", "profile_picker"]
