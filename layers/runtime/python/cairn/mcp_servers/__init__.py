"""Organizations' MCP servers, an integration: kept and synced (`service.py`, its rows in
`store.py` and `store_oauth.py`), served on Letta's /v1/mcp-servers and its older routes by
name (`routes.py`, `routes_by_name.py`, their bodies in `requests.py` and wire shapes in
`shapes.py`), reached through the official `mcp` SDK under the outbound-address policy
(`client.py`), signed in to with OAuth (`oauth.py`, through Letta's connect streams in
`connect.py`), and a step's call of one of their tools (`calls.py`). Assembly registers it
through `edge.py`: the core names no MCP server."""
