"""The adapters: the core's ports implemented for one platform, AWS (`aws/`) or this
process and the local stack (`local/`). Nothing else lives here; the core names none of them
(assembly chooses)."""
