"""Shared pytest fixtures. Keep each fixture small and documented; add new ones below."""
from __future__ import annotations

import pytest
from fake_openai import FakeOpenAI


@pytest.fixture
def fake_openai():
    """A loopback OpenAI-compatible server (tests/fake_openai.py) on 127.0.0.1, a free port."""
    with FakeOpenAI() as server:
        yield server
