"""Cairn: stateful memory agents (Letta-compatible) on AWS serverless."""

__version__ = "0.1.0"
