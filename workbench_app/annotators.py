"""Who counts as a rater: one multiselect shared by the Agreement and Calibration pages."""
from __future__ import annotations

import streamlit as st

from workbench.calibration.agreement import store_annotators
from workbench_app.common import db_session, db_version


@st.cache_data(max_entries=8)
def _known(path: str, version: tuple) -> list[str]:
    """Everyone with a current label in the store at ``path``; ``version`` (mtimes) keys the cache."""
    with db_session(path) as db:
        return store_annotators(db)


def choose_annotators(path: str, *, key: str) -> tuple[str, ...] | None:
    """Render "Annotators who count" and return the chosen names.

    Returns:
        ``None`` when everyone is chosen (or there is nobody to choose), else the chosen names
        as a sorted tuple (hashable, so it can key ``st.cache_data``). Choosing nobody shows a
        warning and counts everyone.
    """
    names = _known(path, db_version(path))
    if not names:
        return None
    chosen = st.multiselect("Annotators who count", names, default=names, key=key,
                            help="Leave out test or typo accounts: only these annotators' labels form the human "
                                 "majority and the human-human agreement.")
    if not chosen:
        st.warning("No annotator chosen: counting everyone.")
        return None
    if set(chosen) == set(names):
        return None
    st.caption(f"Counting {len(chosen)} of {len(names)} annotators; left out: "
               + ", ".join(n for n in names if n not in chosen))
    return tuple(sorted(chosen))
