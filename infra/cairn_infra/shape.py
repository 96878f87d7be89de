"""A stack's shape as one value: what its context flags (`-c name=value`) ask for.

A shape is data, not a fork of the stack: the constructs read their sizes and switches
from it, `app.py` and the tests make it the same way (`Shape.from_context`), and a flag
given a value it cannot take stops the synthesis naming the flag.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cairn_infra.workers import EMBED_CONCURRENCY, FILES_CONCURRENCY, STEP_CONCURRENCY

# Aurora Serverless v2's range of capacity units (AWS's Aurora user guide, "Aurora
# Serverless v2 capacity"): 0 (auto-pause) or 0.5 up to 256, in half units.
MIN_ACU, MAX_ACU = 0.0, 256.0
# Lambda's event source mapping for SQS takes a maximum concurrency of 2 to 1,000.
MIN_MAPPING, MAX_MAPPING = 2, 1000
# `size=small`: no RDS Proxy, a database that pauses when idle, a NAT instance; `production`
# (the default) is the shape the rest of the flags grow.
SIZES = ("production", "small")


def parse_flag(name: str, value: object) -> bool:
    """A true-or-false context flag; unset is false."""
    if value is None or str(value).strip() == "":
        return False
    if str(value).strip().lower() in ("true", "1", "yes"):
        return True
    if str(value).strip().lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"{name}: true or false, not {value!r}")


@dataclass(frozen=True)
class Shape:
    dev: bool = False
    size: str = "production"
    tool_network: bool = False
    sweep_minutes: int | None = None  # None: 1; 60 with size=small
    api_rate_limit: int = 100  # requests a second the API stage admits (bursts of twice)
    stream_concurrency: int | None = None  # reserved concurrency of `stream`
    api_concurrency: int | None = None  # reserved concurrency of `api`
    bedrock_models: tuple[str, ...] = ()
    db_min_acu: float | None = None  # None: 0 with size=small, 0.5 otherwise
    db_max_acu: float = 8
    step_concurrency: int = STEP_CONCURRENCY
    embed_concurrency: int = EMBED_CONCURRENCY
    files_concurrency: int = FILES_CONCURRENCY
    # FIFO high throughput: quotas per message group (one agent) instead of per queue.
    fifo_high_throughput: bool = False
    approval_timeout_hours: float = 168
    # Browser origins allowed to call the API (the functions answer CORS themselves, behind
    # API Gateway and at the streaming URL alike).
    cors_origins: tuple[str, ...] = ()
    # An OTLP/HTTP collector the functions send their traces to (docs/operations.md).
    otel_endpoint: str | None = None
    # One organization (or several that trust each other): no share of the steps'
    # concurrency per organization, so one tenant can use all of it (docs/tenancy.md).
    single_tenant: bool = False
    # The CloudWatch dashboard ($3 a month): None, yes but with size=small.
    dashboard: bool | None = None

    @property
    def small(self) -> bool:
        return self.size == "small"

    @property
    def wants_dashboard(self) -> bool:
        return self.dashboard if self.dashboard is not None else not self.small

    @property
    def min_acu(self) -> float:
        # Only the small shape pauses: every other shape has RDS Proxy in front, and a
        # cluster behind a proxy never pauses (AWS documents auto-pause and RDS Proxy as
        # incompatible), so a 0 floor there would only promise a pause that never comes.
        # `dev` keeps production's connection path (what a dev stack tests is what runs)
        # at 0.5 ACU; a cheap stack is `size=small` (with `dev` for a disposable one).
        if self.db_min_acu is not None:
            return self.db_min_acu
        return 0 if self.small else 0.5

    @property
    def sweep_every(self) -> int:
        """Minutes between sweeps. Each sweep wakes a paused database, which pauses again
        only after 5 idle minutes: the shape that pauses (small) sweeps rarely."""
        if self.sweep_minutes is not None:
            return self.sweep_minutes
        return 60 if self.small else 1

    @classmethod
    def from_context(cls, get: Callable[[str], object]) -> Shape:
        """The shape the context asks for (`get` is `app.node.try_get_context`)."""

        def text(name: str) -> str | None:
            value = get(name)
            return None if value is None or str(value).strip() == "" else str(value).strip()

        def flag(name: str) -> bool:
            return parse_flag(name, get(name))

        def number(name: str, low: float, high: float, *, whole: bool = True) -> float | None:
            value = text(name)
            if value is None:
                return None
            try:
                found = int(value) if whole else float(value)
            except ValueError:
                kind = "a whole number" if whole else "a number"
                raise ValueError(f"{name}: {kind}, not {value!r}") from None
            if not low <= found <= high:
                raise ValueError(f"{name}: from {low:g} to {high:g}, not {value}")
            return found

        def acu(name: str) -> float | None:
            found = number(name, MIN_ACU, MAX_ACU, whole=False)
            if found is not None and (found * 2 != int(found * 2) or 0 < found < 0.5):
                raise ValueError(f"{name}: 0, or 0.5 to 256 in half units, not {found:g}")
            return found

        def whole(name: str, low: int, high: int) -> int | None:
            found = number(name, low, high)
            return None if found is None else int(found)

        models = tuple(m.strip() for m in (text("bedrock_models") or "").split(",") if m.strip())
        origins = tuple(
            o.strip().rstrip("/") for o in (text("cors_origins") or "").split(",") if o.strip()
        )
        if bad := [o for o in origins if not o.startswith(("https://", "http://"))]:
            raise ValueError(f"cors_origins: origins are http(s)://host[:port], not {bad[0]!r}")
        otel = text("otel_endpoint")
        if otel is not None and not otel.startswith(("https://", "http://")):
            raise ValueError(f"otel_endpoint: an http(s):// URL of a collector, not {otel!r}")
        size = (text("size") or "production").lower()
        if size not in SIZES:
            raise ValueError(f"size: one of {', '.join(SIZES)}, not {text('size')!r}")
        shape = cls(
            dev=flag("dev"),
            size=size,
            tool_network=flag("tool_network"),
            sweep_minutes=whole("sweep_minutes", 1, 1440),
            api_rate_limit=whole("api_rate_limit", 1, 10_000) or 100,
            stream_concurrency=whole("stream_concurrency", 1, 10_000),
            api_concurrency=whole("api_concurrency", 1, 10_000),
            bedrock_models=models,
            db_min_acu=acu("db_min_acu"),
            db_max_acu=acu("db_max_acu") or 8,
            step_concurrency=whole("step_concurrency", MIN_MAPPING, MAX_MAPPING)
            or STEP_CONCURRENCY,
            fifo_high_throughput=flag("fifo_high_throughput"),
            approval_timeout_hours=number("approval_timeout_hours", 1 / 60, 24 * 365, whole=False)
            or 168,
            cors_origins=origins,
            otel_endpoint=otel.rstrip("/") if otel else None,
            single_tenant=flag("single_tenant"),
            dashboard=flag("dashboard") if text("dashboard") is not None else None,
        )
        if shape.min_acu == 0 and not shape.small:
            raise ValueError(
                "db_min_acu: 0 (auto-pause) needs size=small: the other shapes put RDS Proxy "
                "in front of the cluster, which keeps it from pausing (AWS documents the two "
                "as incompatible); use 0.5, or -c size=small for a stack that pauses"
            )
        if shape.min_acu > shape.db_max_acu:
            raise ValueError(
                f"db_min_acu: {shape.min_acu:g} is above db_max_acu {shape.db_max_acu:g}"
            )
        return shape
