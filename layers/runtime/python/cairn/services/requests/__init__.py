"""The inputs of the use cases: Letta's request bodies, one module per resource; every
name is here. The API declares them as its request schemas; the services take them as they
are.

Unknown fields are ignored, as Letta does, so clients that send newer fields keep working
(`StrictBody`: the bodies where Letta admits no other keys, providers and identities)."""

from __future__ import annotations

from cairn.services.requests.agents import (
    BlockUpdate,
    CreateAgent,
    CreateBlock,
    ModelSettings,
    ResetMessages,
    UpdateAgent,
)
from cairn.services.requests.base import RequestBody, StrictBody
from cairn.services.requests.folders import FolderCreate, FolderUpdate
from cairn.services.requests.groups import GroupCreate, GroupUpdate, ManagerConfig
from cairn.services.requests.history import ForkRequest, RewindRequest
from cairn.services.requests.identities import (
    IdentityCreate,
    IdentityKey,
    IdentityUpdate,
    IdentityUpsert,
)
from cairn.services.requests.memory import (
    ArchiveCreate,
    ArchivePassageCreate,
    ArchiveUpdate,
    CreatePassage,
    PassageSearch,
)
from cairn.services.requests.messages import (
    CancelRequest,
    CapturedMessage,
    CaptureRequest,
    CreateBatch,
    LettaBatchRequest,
    LettaRequest,
    MessageCreate,
    MessageSearch,
    MessageText,
    MessageUpdate,
    RetrieveStream,
    StepFeedback,
    TextPart,
)
from cairn.services.requests.providers import BaseUrl, ProviderCheck, ProviderCreate, ProviderUpdate
from cairn.services.requests.sandbox import (
    SandboxConfigBody,
    SandboxEnvVarCreate,
    SandboxEnvVarUpdate,
)
from cairn.services.requests.schedules import ScheduleCreate
from cairn.services.requests.tools import (
    ApprovalToggle,
    CodeInput,
    GenerateToolInput,
    ToolCreate,
    ToolRun,
    ToolRunFromSource,
    ToolSearch,
    ToolUpdate,
)

__all__ = [
    "ApprovalToggle",
    "ArchiveCreate",
    "ArchivePassageCreate",
    "ArchiveUpdate",
    "BaseUrl",
    "BlockUpdate",
    "CancelRequest",
    "CaptureRequest",
    "CapturedMessage",
    "CodeInput",
    "CreateAgent",
    "CreateBatch",
    "CreateBlock",
    "CreatePassage",
    "FolderCreate",
    "FolderUpdate",
    "ForkRequest",
    "GenerateToolInput",
    "GroupCreate",
    "GroupUpdate",
    "IdentityCreate",
    "IdentityKey",
    "IdentityUpdate",
    "IdentityUpsert",
    "LettaBatchRequest",
    "LettaRequest",
    "ManagerConfig",
    "MessageCreate",
    "MessageSearch",
    "MessageText",
    "MessageUpdate",
    "ModelSettings",
    "PassageSearch",
    "ProviderCheck",
    "ProviderCreate",
    "ProviderUpdate",
    "RequestBody",
    "ResetMessages",
    "RetrieveStream",
    "RewindRequest",
    "SandboxConfigBody",
    "SandboxEnvVarCreate",
    "SandboxEnvVarUpdate",
    "ScheduleCreate",
    "StepFeedback",
    "StrictBody",
    "TextPart",
    "ToolCreate",
    "ToolRun",
    "ToolRunFromSource",
    "ToolSearch",
    "ToolUpdate",
    "UpdateAgent",
]
