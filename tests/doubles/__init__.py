"""Test doubles: a scripted chat model and an in-memory KG backend.

They test control flow only, never a claim about answer quality, and nothing in the
packages imports them (they used to live in `kgrag/llm/` and `metakg/`).
"""
