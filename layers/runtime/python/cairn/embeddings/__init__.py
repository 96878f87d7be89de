"""Embedding providers: OpenAI, a local MiniLM on CPU, and a deterministic one for tests."""
