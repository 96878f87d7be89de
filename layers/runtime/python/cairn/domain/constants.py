"""Letta's constants that Cairn keeps so agents behave the same."""

CORE_MEMORY_BLOCK_CHAR_LIMIT = 20_000
TOOL_RETURN_CHAR_LIMIT = 50_000
TOOL_RETURN_PER_REQUEST_CHAR_LIMIT = 5_000
RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE = 5
MAX_EMBEDDING_DIM = 4_096
DEFAULT_EMBEDDING_DIM = 1_024
DEFAULT_MAX_STEPS = 50
DEFAULT_MAX_FILES_OPEN = 5
SOURCE_CHAR_LIMIT = 50_000
DEFAULT_CONTEXT_WINDOW = 32_000
MIN_CONTEXT_WINDOW = 4_096

MAX_TOOL_NAME_LENGTH = 48
MAX_TOOL_CALL_ID_LENGTH = 29
MAX_PROVIDER_TOOL_CALL_ID_LENGTH = 128
MAX_BLOCK_LABEL_LENGTH = 100
# Labels become XML-ish tag names in the system prompt and `/memories/<label>` paths, so they
# must not carry whitespace or markup. The database enforces the same pattern.
BLOCK_LABEL_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-/]*$"
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_\-]+$"

# Input limits (docs/api.md, "Limits"). A request body is held to Lambda's own synchronous payload
# limit, so local and AWS answer alike; the rest are far above any model's context window.
MAX_REQUEST_BYTES = 6 * 1024 * 1024


def too_large(size: int) -> str:
    """The 413's detail, the same from the API and from the local bridge that guards it."""
    return f"Request body of {size} bytes is over the limit of {MAX_REQUEST_BYTES} bytes"


MAX_MESSAGE_CHARS = 2_000_000  # the text of one message (all its parts)
MAX_BLOCK_CHARS = 1_000_000  # a block's `limit`, so its value too
MAX_PASSAGE_CHARS = 100_000  # one archival passage (embedded whole)
MAX_CAPTURE_MESSAGES = 1_000  # messages in one capture call
MAX_BATCH_REQUESTS = 500  # agents' messages in one batch (its runs start in one transaction)
MAX_GROUP_MEMBERS = 100  # agents (and shared blocks) of one group
MAX_GROUP_TURNS = 100  # turns one message to a round-robin group runs
MAX_DESCRIPTION_CHARS = 10_000  # a group's description
