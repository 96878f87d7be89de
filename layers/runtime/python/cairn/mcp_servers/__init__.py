"""Organizations' MCP servers, an integration: kept and synced (`service.py`, Letta's
/v1/mcp-servers and its older routes by name), reached through the official `mcp` SDK under
the outbound-address policy (`client.py`), signed in to with OAuth (`oauth.py`, through
Letta's connect streams in `connect.py`), and a step's call of one of their tools
(`calls.py`), handed to the engine at assembly: the run names no MCP server."""
