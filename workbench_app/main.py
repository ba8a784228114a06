"""Streamlit router for the workbench app: the access-token gate, then the pages.

Run it with ``workbench app`` (loopback by default). Pages live in ``views/`` next to this file and only read
widgets, call the ``workbench`` API and render.
"""
import streamlit as st

from workbench_app.common import require_token

st.set_page_config(page_title="workbench", layout="wide")
require_token()  # stops here until the session has the token, when WORKBENCH_APP_TOKEN is set

page = st.navigation(
    [
        st.Page("views/label.py", title="Label", icon=":material/label:", default=True),
        st.Page("views/data.py", title="Data", icon=":material/database:"),
        st.Page("views/agreement.py", title="Agreement", icon=":material/handshake:"),
        st.Page("views/calibration.py", title="Calibration", icon=":material/tune:"),
        st.Page("views/scores.py", title="Scores", icon=":material/scatter_plot:"),
    ]
)
page.run()
