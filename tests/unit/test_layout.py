"""The repository's shape that deployment relies on."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import cairn

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "layers" / "runtime" / "python" / "cairn"


def test_cairn_is_imported_from_the_runtime_layer() -> None:
    assert Path(cairn.__file__).resolve().parent == LIBRARY


def test_runtime_layer_holds_only_the_python_folder() -> None:
    # Lambda unpacks a layer under /opt and puts /opt/python on sys.path.
    tracked = [p for p in (ROOT / "layers" / "runtime").iterdir() if p.name != "__pycache__"]
    assert [p.name for p in tracked] == ["python"]
    assert (LIBRARY / "store" / "migrations" / "0001_initial.sql").is_file()


def _imports(path: Path) -> set[str]:
    """Every module named, lazy imports too. `from cairn.run import sending` names both
    `cairn.run` and `cairn.run.driving.sending` (it named only the package, which hid a circle)."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(
                f"{node.module}.{a.name}" for a in node.names if _is_module(node.module, a.name)
            )
    return names


def _is_module(package: str, name: str) -> bool:
    """`from cairn.run import sending`: `sending` is a module of ours, not a name in one."""
    if not package.startswith("cairn"):
        return False
    folder = LIBRARY.parent.joinpath(*package.split("."), name)
    return folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file()


def test_boto3_only_in_the_aws_adapters() -> None:
    offenders = [
        str(p.relative_to(LIBRARY))
        for p in LIBRARY.rglob("*.py")
        if not p.relative_to(LIBRARY).as_posix().startswith("adapters/aws/")
        and any(n.split(".")[0] in ("boto3", "botocore") for n in _imports(p))
    ]
    assert offenders == []


def test_domain_imports_nothing_from_the_layers_above() -> None:
    above = ("cairn.store", "cairn.run", "cairn.api", "cairn.services", "cairn.llm")
    offenders = [
        str(p.relative_to(LIBRARY))
        for p in (LIBRARY / "domain").rglob("*.py")
        if any(n.startswith(above) for n in _imports(p))
    ]
    assert offenders == []


def test_every_function_has_a_handler_and_nothing_imports_one() -> None:
    handlers = list((ROOT / "functions").glob("*/handler.py"))
    assert {h.parent.name for h in handlers} >= {"api", "migrate"}
    for path in LIBRARY.rglob("*.py"):
        assert not any(n.startswith("functions") for n in _imports(path)), path


def test_memory_and_tools_are_pure_logic() -> None:
    forbidden = ("cairn.store", "boto3", "botocore", "openai", "anthropic", "psycopg")
    offenders = [
        str(p.relative_to(LIBRARY))
        for package in ("memory", "tools")
        for p in (LIBRARY / package).rglob("*.py")
        if any(n.startswith(forbidden) for n in _imports(p))
    ]
    assert offenders == []


def _modules(package: str) -> dict[str, set[str]]:
    """Each module of `cairn.<package>` and the cairn modules it imports (lazy ones too)."""
    found = {}
    for path in (LIBRARY / package).rglob("*.py"):
        parts = path.relative_to(LIBRARY.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = {n for n in _imports(path) if n.startswith("cairn")}
    return found


def test_the_api_reaches_the_store_only_through_services() -> None:
    # ARCHITECTURE.md: api -> services -> run -> store.
    offenders = {
        m: sorted(i for i in imps if i.startswith("cairn.store"))
        for m, imps in _modules("api").items()
    }
    assert {m: i for m, i in offenders.items() if i} == {}
    services = {
        m: sorted(i for i in imps if i.startswith("cairn.api"))
        for m, imps in _modules("services").items()
    }
    assert {m: i for m, i in services.items() if i} == {}


def test_no_api_module_opens_a_connection() -> None:
    # Transactions belong to the services; a route that opened one would be a second engine.
    offenders = [
        str(p.relative_to(LIBRARY))
        for p in (LIBRARY / "api").rglob("*.py")
        if any(word in p.read_text() for word in (".connection()", ".transaction()", ".db."))
    ]
    assert offenders == []


def test_no_route_imports_another_route() -> None:
    for module, imports in _modules("api").items():
        if ".routes." in module:
            assert not any(i.startswith("cairn.api.routes") for i in imports), module


# ARCHITECTURE.md's order, top to bottom (docs/architecture.md draws it): the local stack's
# commands; assembly (builds the Runtime and the app, chooses the adapters, registers the
# edges); the edges (channels and integrations, a folder each, their routes included);
# Letta's routes and the HTTP machinery the edges' routes use; the services; the
# adapters (one folder per platform); the background jobs; the run (driving a run, its step
# kinds, a step's work); the pure parts (memory, tools, llm, embeddings, store); the domain;
# and the leaf modules (settings, errors, the outbound policy) below it all. An import may go
# down any number of floors, never up; on one floor only the arrows listed.
RANKS = [
    {"local"},
    {"assembly"},
    {"telegram", "letta_import", "agent_files", "chat_completions", "mcp_servers"},
    {"api"},
    {"services"},
    {"adapters"},
    {"jobs"},
    {"run"},
    {"memory", "tools", "llm", "embeddings", "store"},
    {"domain"},
    {"config", "errors", "faults", "heap", "outbound", "prices", "sealing", "tracing", "__init__"},
]
SAME_FLOOR = {
    ("tools", "memory"),  # the memory tools run memory's edits
    ("embeddings", "llm"),  # embedding providers share the model providers' clients
} | {(a, b) for a in RANKS[-1] for b in RANKS[-1]}  # the leaves use each other


def _package(path: Path) -> str:
    rel = path.relative_to(LIBRARY)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_imports_follow_the_architectures_order_of_floors() -> None:
    floor = {name: n for n, names in enumerate(RANKS) for name in names}
    packages = {_package(p) for p in LIBRARY.rglob("*.py")}
    assert packages <= set(floor), f"a package with no floor: {packages - set(floor)}"
    wrong = set()
    for path in LIBRARY.rglob("*.py"):
        here = _package(path)
        for name in _imports(path):
            if not name.startswith("cairn.") or name.split(".")[1] == here:
                continue
            there = name.split(".")[1]
            up = floor[there] < floor[here]
            sideways = floor[there] == floor[here] and (here, there) not in SAME_FLOOR
            if up or sideways:
                wrong.add(f"{path.relative_to(LIBRARY)} imports {name}")
    assert sorted(wrong) == []


# SQL text, wherever it hides (a string constant or an f-string's parts); docstrings aside.
SQL_TEXT = re.compile(
    r"\b(SELECT\s+[\w*(]|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|FOR\s+UPDATE"
    r"|CREATE\s+(TABLE|INDEX|FUNCTION|EXTENSION|ROLE|DATABASE)|ALTER\s+(TABLE|ROLE)"
    r"|DROP\s+TABLE|pg_advisory)",
)


def _sql_in(path: Path) -> list[int]:
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and SQL_TEXT.search(node.value)
    ]


def _is_store(rel: str) -> bool:
    """The store, or an edge's own SQL module (`<edge>/store.py`, `<edge>/store_*.py`)."""
    top, _, name = rel.partition("/")
    return top == "store" or (top in EDGES and re.fullmatch(r"store(_\w+)?\.py", name) is not None)


def test_no_sql_text_outside_the_store() -> None:
    # The embedded server's bootstrap sets the superuser's password before any store exists.
    allowed = {"local/postgres.py"}
    offenders = {
        rel: lines
        for p in LIBRARY.rglob("*.py")
        if not _is_store(rel := p.relative_to(LIBRARY).as_posix())
        and rel not in allowed
        and (lines := _sql_in(p))
    }
    assert offenders == {}
    assert _sql_in(LIBRARY / "store" / "claim.py"), "the probe finds the store's own SQL"


def test_only_the_store_speaks_to_the_database() -> None:
    allowed = {
        "api/app.py",  # maps IntegrityError to 409
        "adapters/aws/secrets.py",  # builds a DSN with psycopg's conninfo: no SQL there
        "local/postgres.py",  # the embedded server's bootstrap, before any store exists
        "run/driving/lifecycle.py",  # knows a send's run by its unique key (UniqueViolation)
    }
    offenders = [
        rel
        for p in LIBRARY.rglob("*.py")
        if not _is_store(rel := p.relative_to(LIBRARY).as_posix())
        and rel not in allowed
        and any(n.split(".")[0] == "psycopg" for n in _imports(p))
    ]
    assert offenders == []


def test_only_the_local_stack_imports_the_cdk_app() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in [*LIBRARY.rglob("*.py"), *(ROOT / "functions").rglob("*.py")]
        if "local" not in p.relative_to(ROOT).parts
        and any(n.split(".")[0] in ("cairn_infra", "aws_cdk") for n in _imports(p))
    ]
    assert offenders == []
    for handler in (ROOT / "functions").glob("*/handler.py"):
        assert not any(n.startswith("cairn.local") for n in _imports(handler)), handler


# The edges: channels and integrations, a folder each (ARCHITECTURE.md, "Core and edges").
EDGES = {"telegram", "letta_import", "agent_files", "chat_completions", "mcp_servers"}
# Who may name an edge or an adapter: what assembles the process.
ASSEMBLERS = {"assembly", "local"}
# The words that name an edge in code (identifiers and strings; a comment or a docstring may
# mention one): its package, and its own things' names (ids, tables, settings, queue kinds).
EDGE_WORDS = {
    "telegram": re.compile(r"telegram", re.IGNORECASE),
    "mcp_servers": re.compile(r"mcp_server|mcp[-_]oauth|mcp_timeout", re.IGNORECASE),
    "chat_completions": re.compile(r"chat_completions"),
    "agent_files": re.compile(r"cairn[./]agent_files"),
    "letta_import": re.compile(r"letta_import"),
}


def _code_words(path: Path) -> set[str]:
    """The identifiers, attribute names and string constants of a module, its docstrings
    aside."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            words.add(node.name)
        elif isinstance(node, ast.arg):
            words.add(node.arg)
        elif isinstance(node, ast.alias):
            words.add(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            words.add(node.module)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            words.add(node.value)
    return words


def _importers_of(package: str) -> set[str]:
    return {
        p.relative_to(LIBRARY).as_posix()
        for p in LIBRARY.rglob("*.py")
        if _package(p) != package
        and any(n == f"cairn.{package}" or n.startswith(f"cairn.{package}.") for n in _imports(p))
    }


def test_an_edge_is_named_only_in_its_folder_and_by_assembly() -> None:
    for edge in EDGES:
        named_by = {m for m in _importers_of(edge) if m.split("/")[0] != "assembly"}
        assert named_by == set(), f"{edge} imported outside its folder: {named_by}"
    # Nor by a word in the code (a queue kind, an id prefix, a table): a channel's run keeps
    # its chat in its metadata (`channel`), which its steps' messages carry unread.
    named = {
        f"{rel} names {edge}: {sorted(w for w in words if pattern.search(w))}"
        for p in LIBRARY.rglob("*.py")
        if (rel := p.relative_to(LIBRARY).as_posix()).split("/")[0] not in EDGES | {"assembly"}
        for words in [_code_words(p)]
        for edge, pattern in EDGE_WORDS.items()
        if any(pattern.search(w) for w in words)
    }
    assert sorted(named) == []


def test_the_probe_finds_an_edges_words() -> None:
    # The word check reads what it should: its own edge's words are in each edge's folder.
    for edge in ("telegram", "mcp_servers"):
        words = set().union(*(_code_words(p) for p in (LIBRARY / edge).rglob("*.py")))
        assert any(EDGE_WORDS[edge].search(w) for w in words), edge


def test_an_edge_is_one_folder_with_its_record() -> None:
    # Its routes, SQL and request models in its folder; assembly registers its one record.
    from cairn.assembly.edges import EDGES as registered

    assert {e.name for e in registered} == EDGES
    for edge in registered:
        for module in edge.routes:
            assert module.startswith(f"cairn.{edge.name}."), module
            assert (LIBRARY.parent / (module.replace(".", "/") + ".py")).is_file(), module
    assert not (LIBRARY / "api" / "routes" / "telegram.py").exists()
    for package in ("store", "domain", "services/requests", "api/routes", "api/letta"):
        stray = {
            p.relative_to(LIBRARY).as_posix()
            for p in (LIBRARY / package).glob("*.py")
            if any(e.split("_")[0] in p.stem for e in EDGES - {"agent_files"})
        }
        assert stray == set(), stray


def test_adapters_are_reached_only_through_assembly() -> None:
    named_by = {m for m in _importers_of("adapters") if m.split("/")[0] not in ASSEMBLERS}
    assert named_by == set()
    # And the adapter folders hold adapters only: one folder per platform, plus the choice.
    top = {p.name for p in (LIBRARY / "adapters").iterdir() if p.name != "__pycache__"}
    assert top == {"__init__.py", "aws", "local", "chosen.py"}


def test_no_package_has_an_import_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for package in {_package(p) for p in LIBRARY.rglob("*.py") if p.parent != LIBRARY}:
        graph |= _modules(package)
    # A depth-first walk: a module met again while it is still being walked closes a circle.
    state: dict[str, str] = {}
    circles: list[str] = []

    def walk(module: str, path: list[str]) -> None:
        state[module] = "open"
        for nxt in sorted(graph.get(module, ())):
            if state.get(nxt) == "open":
                circles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt in graph and nxt not in state:
                walk(nxt, [*path, nxt])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert circles == []


def test_the_run_holds_one_idea_per_package() -> None:
    # ARCHITECTURE.md: driving a run, the step and its kinds, the tools' backends; what
    # every package of the run sees (its ports, the process's record) at the top.
    packages = {p.parent.name for p in (LIBRARY / "run").glob("*/__init__.py")}
    assert packages == {"driving", "steps", "backends"}
    top = {p.stem for p in (LIBRARY / "run").glob("*.py")}
    assert {"ports", "runtime"} <= top and len(top) <= 12, sorted(top)
    long = {
        p.relative_to(LIBRARY).as_posix(): n
        for p in (LIBRARY / "run").rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert long == {}


def test_every_404_is_worded_in_one_place() -> None:
    # errors.found() for a fetch, errors.not_found() for a deletion or a list's missing ids:
    # Letta's wording ("<Kind> with id '<id>' not found") is written once.
    made = {
        p.relative_to(LIBRARY).as_posix()
        for p in LIBRARY.rglob("*.py")
        if p.name != "errors.py" and re.search(r"\bNotFoundError\(", p.read_text())
    }
    assert made == set()
