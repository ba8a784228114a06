"""Judges: offline (deterministic baseline), OpenAI-compatible (LLM), scripted (tests)."""
