"""Cairn's CDK constructs, one per concern; `infra/app.py` puts them together."""
