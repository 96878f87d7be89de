"""Letta's built-in tools, each a typed function whose docstring is its schema."""
