"""Helpers shared by the Streamlit pages: the store path, a connection per action, the token gate.

The app reads the label store named by ``WORKBENCH_DB`` (``workbench app --db`` sets it), else
``labels/workbench.db`` under ``WORKBENCH_HOME``. Each action opens its own connection
(``db_session``) and closes it: Streamlit runs every browser session on its own thread, so no
sqlite connection is ever cached or shared.
"""
from __future__ import annotations

import contextlib
import hmac
import os
from collections.abc import Collection, Iterator
from importlib import resources
from pathlib import Path

import streamlit as st

from workbench.config import default_db_path, home
from workbench.stats.active import priority_order
from workbench.store import LEASE_SECONDS, next_unit_for, open_db
from workbench.types import Unit

TOKEN_ENV = "WORKBENCH_APP_TOKEN"
DB_ENV = "WORKBENCH_DB"


def db_path() -> Path:
    """The label store this app serves (``WORKBENCH_DB`` or ``<home>/labels/workbench.db``)."""
    return default_db_path()


@contextlib.contextmanager
def db_session(path: str | Path | None = None) -> Iterator:
    """Open the store for one action and always close it."""
    db = open_db(path or db_path())
    try:
        yield db
    finally:
        db.close()


def db_version(path: str | Path) -> tuple:
    """A cache key that changes when the store changes: mtimes and sizes of the file and its WAL.

    In WAL mode writes land in ``<db>-wal`` first, so the main file's mtime alone would miss them.
    """
    parts = []
    for suffix in ("", "-wal"):
        p = Path(str(path) + suffix)
        try:
            stat = p.stat()
            parts.append((stat.st_mtime_ns, stat.st_size))
        except FileNotFoundError:
            parts.append(None)
    return tuple(parts)


def remember(key: str, default):
    """Keep a widget's value across page switches (Streamlit drops state of unrendered widgets).

    Call before creating the widget with ``key=key``; the value is restored from a shadow key.
    """
    shadow = f"_keep_{key}"
    if key not in st.session_state:
        st.session_state[key] = st.session_state.get(shadow, default)
    return st.session_state[key]


def keep(key: str) -> None:
    """Store a widget's current value in its shadow key (see ``remember``)."""
    if key in st.session_state:
        st.session_state[f"_keep_{key}"] = st.session_state[key]


def token_ok(given: str | None, expected: str) -> bool:
    """Whether ``given`` equals ``expected``, compared in constant time (``hmac.compare_digest``)."""
    if not given:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def require_token() -> None:
    """Stop the script until this browser session has entered ``WORKBENCH_APP_TOKEN``.

    Does nothing when the variable is unset (the app then listens on loopback only; the
    ``workbench app`` command refuses a non-loopback host without a token).
    """
    expected = os.environ.get(TOKEN_ENV)
    if not expected or st.session_state.get("_token_ok"):
        return
    st.title("Judge-calibration workbench")
    st.write("This workbench is shared on a network. Enter the access token to continue.")
    with st.form("token_form"):
        given = st.text_input("Access token", type="password", key="access_token")
        submitted = st.form_submit_button("Enter")
    if submitted:
        if token_ok(given, expected):
            st.session_state["_token_ok"] = True
            st.session_state.pop("access_token", None)
            st.rerun()
        st.error("Wrong access token.")
    st.stop()


def run_roots() -> list[Path]:
    """Where the Scores page looks for scored runs: ``<home>/runs``, then the label store's folder.

    The second makes ``workbench app --db runs/demo/labels.db`` list ``runs/demo/rag`` and
    ``runs/demo/begin`` whichever folder the app was started from.
    """
    return list(dict.fromkeys([home() / "runs", db_path().parent]))


#: The labelling guidelines shipped with the package (the checkout's ``labels/guidelines.md`` links here).
PACKAGED_GUIDELINES = "workbench.calibration", "guidelines.md"


def guidelines_text() -> str | None:
    """The labelling guidelines: ``<home>/labels/guidelines.md`` (a project's own), else the packaged copy.

    The packaged copy is ``workbench/calibration/guidelines.md`` (read with ``importlib.resources``,
    so it is found in an installed wheel as in a checkout). ``None`` only when neither exists.
    """
    own = home() / "labels" / "guidelines.md"
    if own.is_file():
        return own.read_text(encoding="utf-8")
    packaged = resources.files(PACKAGED_GUIDELINES[0]) / PACKAGED_GUIDELINES[1]
    return packaged.read_text(encoding="utf-8") if packaged.is_file() else None


def pick_unit(
    db,
    annotator: str,
    *,
    task: str | None,
    overlap: int,
    order: str,
    threshold: float,
    skipped: Collection[str] = (),
    lease_seconds: float = LEASE_SECONDS,
) -> Unit | None:
    """The next unit to show, reserved for this annotator with a lease (``next_unit_for``).

    Units skipped in this session are passed over. Asking again returns the same unit while the
    lease holds and the unit is still wanted; another annotator is not given it (overlap 1) until
    it is labelled or the lease expires. Returns ``None`` when nothing is left (skipped units
    included: the page offers to bring them back).
    """
    return next_unit_for(db, annotator, task=task, overlap=overlap, order=order, threshold=threshold,
                         exclude=skipped, lease_seconds=lease_seconds, priority=priority_order)


LABEL_CSS = """<style>
[class*="st-key-label_pos_"] button {background-color: #1a7f37; border-color: #1a7f37; color: #fff;}
[class*="st-key-label_neg_"] button {background-color: #b42318; border-color: #b42318; color: #fff;}
[class*="st-key-label_pos_"] button:hover, [class*="st-key-label_neg_"] button:hover {filter: brightness(1.12); color: #fff;}
.wb-passage {white-space: normal; font-size: 0.92rem; line-height: 1.4; margin-bottom: 0.6rem;}
.wb-passage mark {background: #ffe066; padding: 0 2px;}
.block-container {padding-top: 2.2rem;}
.st-key-label_ghosts {display: none !important;}
</style>"""


def label_css() -> None:
    """Style the Label page: positive value green, negative red; compact top padding; quote marks."""
    st.html(LABEL_CSS)
