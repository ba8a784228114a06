"""Metrics: each compares one stage of a RAG system against its own reference.

Pure where they can be (retrieval, abstention, quadrant); the judged ones receive a judge and
never build one.
"""
