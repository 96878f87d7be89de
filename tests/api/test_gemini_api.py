"""A Gemini agent through the API with the unchanged letta-client: listed, created, streamed."""

from __future__ import annotations

from tests.api.conftest import Stack


def test_letta_client_creates_and_talks_to_a_gemini_agent(stack: Stack) -> None:
    """`google_ai/<model>` as Letta names it, with GEMINI_API_KEY set on the server."""
    settings = stack.runtime.settings
    settings.gemini_api_key, settings.gemini_base_url = "gm-test", stack.fake.base_url
    client = stack.client()
    handles = [m.handle for m in client.models.list()]
    assert "google_ai/gemini-fake-flash" in handles
    assert "google_ai/gemini-embedding-001" in [m.handle for m in client.models.embeddings.list()]
    agent = client.agents.create(
        model="google_ai/gemini-2.5-flash", embedding="google_ai/gemini-embedding-001"
    )
    assert agent.llm_config.model_endpoint_type == "google_ai"
    assert agent.llm_config.context_window == 1_048_576
    stack.fake.reply("Hello from Gemini, one piece at a time.", chunk_delay=0.01)
    pieces = [
        e
        for e in client.agents.messages.stream(agent.id, input="hi", stream_tokens=True)
        if e.message_type == "assistant_message"
    ]
    assert len(pieces) > 3
    assert "".join(p.content for p in pieces) == "Hello from Gemini, one piece at a time."
    assert not any(c["role"] == "system" for c in stack.fake.requests[-1].body["contents"])
