"""The Streamlit app (router ``main.py``, pages in ``views/``); the only package that imports streamlit."""
