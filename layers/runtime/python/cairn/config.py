"""Settings read from the environment (the same names locally and on Lambda), grouped by
the package that reads them; each group names the variable each of its fields is read from.
`Settings` is every core group; an edge's group is in its own folder, added by assembly
(`assembly/edges.py`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Group(BaseModel):
    """A group of settings: its fields and `ENV`, the variable each is read from. A key's
    field is left out of the repr: settings printed or logged show no secret."""

    # Each group, `Settings` and the class assembly makes of them all would each build its
    # validator when defined; only the last is ever read from the environment in a process.
    model_config = ConfigDict(defer_build=True)

    ENV: ClassVar[dict[str, str]] = {}

    @classmethod
    def variables(cls) -> dict[str, str]:
        """Each field's variable, over this class and the groups it is made of."""
        return {
            k: v for base in reversed(cls.__mro__) for k, v in vars(base).get("ENV", {}).items()
        }

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Self:
        env = dict(os.environ if env is None else env)
        return cls.model_validate({k: env[v] for k, v in cls.variables().items() if env.get(v)})

    @classmethod
    def within(cls, settings: Group) -> Self:
        """This group's settings among a process's (an edge's, in the settings assembly
        makes); a TypeError if they were made without it."""
        if not isinstance(settings, cls):
            raise TypeError(
                f"settings made without {cls.__name__} (assembly.edges.Settings has it)"
            )
        return settings


class DatabaseSettings(Group):
    """The database: how the store, assembly and the local stack connect."""

    ENV: ClassVar[dict[str, str]] = {
        "database_url": "DATABASE_URL",
        "db_secret_arn": "CAIRN_DB_SECRET_ARN",
        "db_host": "CAIRN_DB_HOST",
        "db_iam_user": "CAIRN_DB_IAM_USER",
        "db_app_secret_arn": "CAIRN_DB_APP_SECRET_ARN",
        "db_app_iam": "CAIRN_DB_APP_IAM",
        "db_idle_session_seconds": "CAIRN_DB_IDLE_SESSION_SECONDS",
        "db_name": "CAIRN_DB_NAME",
        "db_pool_size": "CAIRN_DB_POOL_SIZE",
        "db_sslmode": "CAIRN_DB_SSLMODE",
        "db_sslrootcert": "CAIRN_DB_SSLROOTCERT",
        "db_prepared_statements": "CAIRN_DB_PREPARED_STATEMENTS",
    }
    # Any PostgreSQL >= 15 with pgvector; unset locally means "start the embedded server".
    database_url: str | None = None
    # On AWS: the Secrets Manager secret holding the database credentials (RDS format).
    db_secret_arn: str | None = None
    db_host: str | None = None  # RDS Proxy endpoint; overrides the secret's host
    # On AWS: connect as this database user with an IAM token (RDS Proxy's IAM
    # authentication) instead of a password from CAIRN_DB_SECRET_ARN.
    db_iam_user: str | None = None
    # The migrate function: the application role's secret, whose password it sets.
    db_app_secret_arn: str | None = None
    # The migrate function of a stack without RDS Proxy: the application role logs in to the
    # cluster with IAM tokens (granted rds_iam), not a password.
    db_app_iam: bool = False
    # End a session idle this long (the server's idle_session_timeout): an Aurora cluster
    # pauses only with no connections, and a warm function keeps its own open.
    db_idle_session_seconds: float | None = Field(default=None, gt=0)
    db_name: str = "cairn"
    db_pool_size: int = Field(default=1, ge=1)
    # TLS to the database when the connection comes from the secret: the proxy's certificate
    # checked, name included, against the CA bundle (certifi's unless this names a file).
    db_sslmode: Literal["disable", "prefer", "require", "verify-ca", "verify-full"] = "verify-full"
    db_sslrootcert: str | None = None
    # Server-side prepared statements; unset: on, except behind RDS Proxy (CAIRN_DB_HOST),
    # where they would pin every session to one database connection.
    db_prepared_statements: bool | None = None

    @property
    def prepare_statements(self) -> bool:
        if self.db_prepared_statements is not None:
            return self.db_prepared_statements
        return self.db_host is None


class LocalSettings(Group):
    """The local stack (`cairn.local`)."""

    ENV: ClassVar[dict[str, str]] = {
        "port": "CAIRN_PORT",
        "api_key": "CAIRN_API_KEY",
        "data_dir": "CAIRN_DATA_DIR",
    }
    port: int = Field(default=8283, ge=1, le=65535)
    api_key: str | None = Field(default=None, repr=False)
    data_dir: Path = Path(".cairn")


class PlatformSettings(Group):
    """The AWS parts assembly chooses between (`assembly/build.py`, `adapters/`); unset,
    their in-process stand-ins."""

    ENV: ClassVar[dict[str, str]] = {
        "step_queue_url": "CAIRN_STEP_QUEUE_URL",
        "embed_queue_url": "CAIRN_EMBED_QUEUE_URL",
        "documents_bucket": "CAIRN_DOCUMENTS_BUCKET",
        "files_queue_url": "CAIRN_FILES_QUEUE_URL",
        "scheduler_group": "CAIRN_SCHEDULER_GROUP",
        "scheduler_target_arn": "CAIRN_SCHEDULER_TARGET_ARN",
        "scheduler_role_arn": "CAIRN_SCHEDULER_ROLE_ARN",
        "approval_state_machine_arn": "CAIRN_APPROVAL_STATE_MACHINE_ARN",
        "sleeptime_state_machine_arn": "CAIRN_SLEEPTIME_STATE_MACHINE_ARN",
        "sandbox_function": "CAIRN_SANDBOX_FUNCTION",
        "tool_egress_secret_arn": "CAIRN_TOOL_EGRESS_SECRET_ARN",
        "provider_secret_arn": "CAIRN_PROVIDER_SECRET_ARN",
        "provider_secret_prefix": "CAIRN_PROVIDER_SECRET_PREFIX",
        "sealing_key_secret_arn": "CAIRN_SEALING_KEY_SECRET_ARN",
    }
    # The SQS FIFO step queue; unset runs steps on a worker thread inside the process.
    step_queue_url: str | None = None
    # The embedding jobs' FIFO queue; unset sends them with the steps (or, without a
    # step queue, to a worker thread of their own).
    embed_queue_url: str | None = None
    # Files in folders: the originals' bucket (unset: a directory under data_dir) and the
    # queue of their processing jobs (unset: the embedding queue's, else in process).
    documents_bucket: str | None = None
    files_queue_url: str | None = None
    # Scheduled messages on EventBridge Scheduler: its group, the function it invokes and
    # the role it invokes it with (unset: the sweeper's round fires them alone).
    scheduler_group: str | None = None
    scheduler_target_arn: str | None = None
    scheduler_role_arn: str | None = None
    # The approval and sleeptime state machines (unset: in-process stand-ins, no timeout).
    approval_state_machine_arn: str | None = None
    sleeptime_state_machine_arn: str | None = None
    # On AWS: the sandbox Lambda that runs custom tools (unset: a local subprocess), and the
    # secret whose value signs their egress passes (docs/tools.md "The tool sandbox").
    sandbox_function: str | None = None
    tool_egress_secret_arn: str | None = None
    # On AWS: the Secrets Manager secret holding the model providers' keys (JSON).
    provider_secret_arn: str | None = None
    # Organizations' own provider keys (the providers API): a Secrets Manager secret each
    # under this prefix on AWS; else sealed in the database with the envelope key
    # (ModelSettings.provider_key).
    provider_secret_prefix: str | None = None
    # On AWS: the secret whose value is the key agents' secrets are sealed with (its SHA-256);
    # unset: the envelope key (ModelSettings.provider_key).
    sealing_key_secret_arn: str | None = None


class ApiSettings(Group):
    """How the API answers (`api`, `services`): browsers, a send's and a stream's time,
    the public address."""

    ENV: ClassVar[dict[str, str]] = {
        "cors_origins": "CAIRN_CORS_ORIGINS",
        "sync_budget_seconds": "CAIRN_SYNC_BUDGET_SECONDS",
        "stream_budget_seconds": "CAIRN_STREAM_BUDGET_SECONDS",
        "stream_ping_seconds": "CAIRN_STREAM_PING_SECONDS",
        "public_url": "CAIRN_PUBLIC_URL",
    }
    # Browser clients: the origins allowed to call the API (comma-separated; none by default,
    # `make dev` allows local development servers).
    cors_origins: str = ""
    # How long a synchronous send waits for its run before answering with the run to poll;
    # API Gateway cuts HTTP API integrations at 30 s.
    sync_budget_seconds: float = Field(default=25.0, gt=0)
    # How long a stream runs its turn's steps itself (within its invocation's time); what is
    # left then runs on the queue and the stream follows it from the database.
    stream_budget_seconds: float = Field(default=840.0, gt=0)
    # A ping on a stream this long after its last event (Letta's keepalive_interval).
    stream_ping_seconds: float = Field(default=50.0, gt=0)
    # Where clients reach this API (its API Gateway stage): told to Telegram for a bot made
    # without a webhook address, and in links the API gives; unset: the request's host.
    public_url: str | None = None


class SweeperSettings(Group):
    """What the sweeper and the background jobs keep, retry and re-send (`run/driving/sweeper.py`,
    `jobs`)."""

    ENV: ClassVar[dict[str, str]] = {
        "embed_retry_seconds": "CAIRN_EMBED_RETRY_SECONDS",
        "embed_max_tries": "CAIRN_EMBED_MAX_TRIES",
        "outbox_retention_days": "CAIRN_OUTBOX_RETENTION_DAYS",
        "history_retention_days": "CAIRN_HISTORY_RETENTION_DAYS",
        "sweep_activity_functions": "CAIRN_SWEEP_ACTIVITY_FUNCTIONS",
        "sweep_activity_seconds": "CAIRN_SWEEP_ACTIVITY_SECONDS",
        "run_stall_seconds": "CAIRN_RUN_STALL_SECONDS",
    }
    # An agent whose embeddings fail is tried again after this long, doubling each time (at
    # most 6 h apart), and no more after this many failures until its embedding_config
    # changes (store.embedding_holds).
    embed_retry_seconds: float = Field(default=60.0, ge=0)
    embed_max_tries: int = Field(default=10, ge=1)
    # Sent outbox rows are history nobody reads; the sweeper deletes them after this long.
    outbox_retention_days: float = Field(default=7.0, gt=0)
    # How long agents' history (time travel: docs/history.md) is kept; older versions are
    # folded into the oldest one kept by the sweeper.
    history_retention_days: float = Field(default=90.0, gt=0)
    # The sweeper skips a round when none of these functions (comma-separated names) ran in
    # the last `sweep_activity_seconds`: the small shape, whose database a round would wake.
    sweep_activity_functions: str = ""
    sweep_activity_seconds: float = Field(default=0.0, ge=0)
    # The sweeper's watchdog re-sends the step of a run that made no progress for this long
    # (a lost queue message, a worker that died mid-step). Longer than any step can run:
    # a Lambda runs at most 900 s, and a failed delivery waits out the queue's visibility.
    run_stall_seconds: float = Field(default=1800.0, gt=0)


class OperatorSettings(Group):
    """The operator's view (`services/usage.py`, `adapters`): prices and metrics."""

    ENV: ClassVar[dict[str, str]] = {
        "prices": "CAIRN_PRICES",
        "metrics": "CAIRN_METRICS",
    }
    # Prices over the listed ones, for usage's estimated cost (JSON: cairn/prices.py).
    prices: str = ""
    # The operator's metrics (docs/operations.md): "emf" on AWS (CloudWatch), "" none.
    metrics: Literal["", "emf"] = ""

    @field_validator("prices")
    @classmethod
    def _prices(cls, value: str) -> str:
        from cairn import prices

        if value:
            prices.parse_prices(value)  # ValueError names the bad one
        return value


class ToolSettings(Group):
    """The tools (`tools`, `run`): the sandbox, its egress, the built-in tools' services and
    waits."""

    ENV: ClassVar[dict[str, str]] = {
        "exa_api_key": "EXA_API_KEY",
        "exa_base_url": "CAIRN_EXA_BASE_URL",
        "agent_reply_seconds": "CAIRN_AGENT_REPLY_SECONDS",
        "tool_timeout_seconds": "CAIRN_TOOL_TIMEOUT_SECONDS",
        "sandbox_isolation": "CAIRN_SANDBOX_ISOLATION",
        "tool_egress_proxy": "CAIRN_TOOL_EGRESS_PROXY",
        "tool_private_networks": "CAIRN_TOOL_PRIVATE_NETWORKS",
        "mcp_stdio_paths": "CAIRN_MCP_STDIO_PATHS",
    }
    # web_search (Exa): the server's key, for agents without an EXA_API_KEY secret, and the
    # endpoint (Exa's unless set).
    exa_api_key: str | None = Field(default=None, repr=False)
    exa_base_url: str | None = None
    # How long send_message_to_agent_and_wait_for_reply (and the tag-matching send) waits
    # for the other agents' turns, in all; never past the step's own deadline.
    agent_reply_seconds: float = Field(default=120.0, gt=0, le=900)
    # Wall-clock limit of one custom tool call in the sandbox.
    tool_timeout_seconds: float = Field(default=10.0, gt=0, le=900)
    # Locally: "namespaces" (each call in namespaces of its own, docs/tools.md "The tool
    # sandbox") or "process" (a plain child process: only for code you trust).
    sandbox_isolation: Literal["namespaces", "process"] = "namespaces"
    # On AWS: the egress proxy (host:port) through which tools reach their organization's
    # allowed hosts (docs/tools.md "The tool sandbox"). Locally the sandbox runs its own
    # proxy and needs none.
    tool_egress_proxy: str | None = None
    # Comma-separated networks the proxy may reach although not public (e.g. 10.0.0.0/8 for
    # a service of your own); by default only public addresses, whatever a host resolves to.
    tool_private_networks: str = ""
    # Host folders a stdio MCP server's program sees, read-only, in the tool jail besides
    # the system's and the interpreter's (its programs and packages), comma-separated.
    mcp_stdio_paths: str = ""


class ModelSettings(Group):
    """The model and embedding providers (`llm`, `embeddings`): keys, endpoints, time limits,
    images."""

    ENV: ClassVar[dict[str, str]] = {
        "text_only_models": "CAIRN_TEXT_ONLY_MODELS",
        "vision_model": "CAIRN_VISION_MODEL",
        "image_descriptions_per_turn": "CAIRN_IMAGE_DESCRIPTIONS_PER_TURN",
        "embedding_threads": "CAIRN_EMBEDDING_THREADS",
        "openai_api_key": "OPENAI_API_KEY",
        "openai_base_url": "OPENAI_BASE_URL",
        "anthropic_api_key": "ANTHROPIC_API_KEY",
        "anthropic_base_url": "ANTHROPIC_BASE_URL",
        "gemini_api_key": "GEMINI_API_KEY",
        "gemini_base_url": "GEMINI_BASE_URL",
        "provider_key": "CAIRN_PROVIDER_KEY",
        "bedrock_base_url": "CAIRN_BEDROCK_BASE_URL",
        "outbound_networks": "CAIRN_OUTBOUND_NETWORKS",
        "llm_timeout_seconds": "CAIRN_LLM_TIMEOUT_SECONDS",
        "llm_first_byte_seconds": "CAIRN_LLM_FIRST_BYTE_SECONDS",
        "llm_idle_seconds": "CAIRN_LLM_IDLE_SECONDS",
        "llm_max_retries": "CAIRN_LLM_MAX_RETRIES",
        "provider_traces": "CAIRN_PROVIDER_TRACES",
    }
    # Images for models without vision: those models (names or handles, comma-separated)
    # get each image described by the vision model (a handle) instead, at most this many
    # new descriptions a step.
    text_only_models: str = ""
    vision_model: str | None = None
    image_descriptions_per_turn: int = Field(default=4, ge=0, le=50)
    # CPU threads the in-process embedding model uses. One: a query is a few dozen tokens,
    # the process shares its cores with the API, the workers and Postgres, and torch's
    # default (every core) made one query 0.7 s on a loaded 2-core machine against 67 ms.
    embedding_threads: int = Field(default=1, ge=1, le=64)
    # The server's model providers: keys and endpoints (an agent's llm_config.model_endpoint
    # overrides the base URLs).
    openai_api_key: str | None = Field(default=None, repr=False)
    openai_base_url: str | None = None
    anthropic_api_key: str | None = Field(default=None, repr=False)
    anthropic_base_url: str | None = None
    gemini_api_key: str | None = Field(default=None, repr=False)
    gemini_base_url: str | None = None
    # base64 of 32 bytes; default: a key file in data_dir
    provider_key: str | None = Field(default=None, repr=False)
    # Set for one call only, never from the environment: an organization's own Bedrock
    # credentials (access key id, secret access key, region); None: the function's role.
    bedrock_own_key: tuple[str, str, str] | None = Field(default=None, repr=False)
    # Set for one call only, never from the environment: the call carries an organization's
    # own key (llm.endpoints: it goes to the organization's URL, checked by the policy).
    tenant_key: bool = False
    # Where Bedrock is called with the functions' role when not at AWS's own endpoint (a
    # VPC endpoint's DNS name; tests). Agents may name this, AWS's endpoints, or none.
    bedrock_base_url: str | None = None
    # Comma-separated networks the server may reach at URLs an organization gave (model
    # endpoints, providers' base_url) although not public (cairn.outbound); default: none.
    outbound_networks: str = ""
    # One step's model call, every attempt included (llm.deadline.bounded), and within it
    # the wait for an answer's first byte (for an answer not streamed: all of it) and
    # between its bytes (llm.patience; docs/tenancy.md argues the defaults).
    llm_timeout_seconds: float = Field(default=120.0, gt=0)
    llm_first_byte_seconds: float = Field(default=90.0, gt=0)
    llm_idle_seconds: float = Field(default=30.0, gt=0)
    # The SDKs retry 408/409/429/5xx and timeouts with exponential backoff and jitter.
    llm_max_retries: int = Field(default=3, ge=0)
    # Keep each step's provider request and response (GET /v1/steps/{id}/trace). Off by
    # default: a request holds the whole context window, so traces grow with every step.
    provider_traces: bool = False

    @field_validator("outbound_networks")
    @classmethod
    def _networks(cls, value: str) -> str:
        from cairn import outbound

        outbound.networks(value)  # ValueError names the bad one
        return value


class TenancySettings(Group):
    """What one organization may hold at once (`services/limits.py`, `store/claim.py`,
    schedules, files)."""

    ENV: ClassVar[dict[str, str]] = {
        "org_max_runs": "CAIRN_ORG_MAX_RUNS",
        "step_concurrency": "CAIRN_STEP_CONCURRENCY",
        "org_reserve": "CAIRN_ORG_RESERVE",
        "agent_max_schedules": "CAIRN_AGENT_MAX_SCHEDULES",
        "schedule_max_chars": "CAIRN_SCHEDULE_MAX_CHARS",
        "org_schedules_per_round": "CAIRN_ORG_SCHEDULES_PER_ROUND",
        "org_files_at_once": "CAIRN_ORG_FILES_AT_ONCE",
    }
    # How many agents one organization's runs may hold at once (0: no limit): a run taking
    # another agent waits in the outbox until one of its organization's runs ends, so one
    # tenant (a hanging model, a flood of sends) cannot take every step worker.
    org_max_runs: int = Field(default=0, ge=0)
    # With a share: the step pool's size and the places of it kept for organizations with
    # nothing running (an organization holding agents takes another only while all hold
    # fewer than the pool less the reserve; migration 0031). 0: no reserve.
    step_concurrency: int = Field(default=0, ge=0)
    org_reserve: int = Field(default=0, ge=0)
    # Scheduled messages: how many still to fire an agent may have, and a message's size.
    agent_max_schedules: int = Field(default=50, ge=1)
    schedule_max_chars: int = Field(default=10_000, ge=1)
    # How many of one organization's due schedules a sweeper round fires (the rest: later).
    org_schedules_per_round: int = Field(default=20, ge=1)
    # How many of one organization's files are processed at once (their queue's groups).
    org_files_at_once: int = Field(default=2, ge=1)

    @property
    def reserve_at(self) -> int:
        """How many agents all organizations may hold before one that holds some must wait
        (the pool less its reserve); 0: no reserve."""
        if self.step_concurrency <= 0 or self.org_reserve <= 0:
            return 0
        return max(1, self.step_concurrency - self.org_reserve)


class Settings(
    DatabaseSettings,
    LocalSettings,
    PlatformSettings,
    ApiSettings,
    SweeperSettings,
    OperatorSettings,
    ToolSettings,
    ModelSettings,
    TenancySettings,
):
    """Every core group: what `Runtime.settings` holds (with the edges' groups, as assembly
    makes it)."""
