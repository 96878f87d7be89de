"""How recall and archival search rank (store/search.py), on real Postgres: BM25 over the
indexed words, neighbours lending their score, and the fusion with vectors. Each test would
fail on the ranking it replaced (Postgres full text with every query word required)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from cairn.domain import Organization
from cairn.domain.indexing import indexed_text
from cairn.domain.messages import Message, TextContent
from cairn.domain.passages import Archive, Passage
from cairn.embeddings.base import HashEmbedder
from cairn.store import archives, messages
from cairn.store.db import Database
from cairn.store.search import Ranking, hybrid_messages, search_passages
from tests.integration.engine_harness import make_agent

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)
EMBED = HashEmbedder(384)


def with_history(  # type: ignore[no-untyped-def]
    db: Database,
    org: Organization,
    said: list[tuple[str, str | None, str]],
    *,
    agent=None,
    start: datetime = NOW,
):
    """An agent whose recall holds `said`: (role, name, text), a minute apart from `start`
    (appended to `agent`'s if given)."""
    agent = agent or make_agent(db, org)
    with db.transaction() as conn:
        messages.insert(
            conn,
            [
                Message(
                    organization_id=org.id,
                    agent_id=agent.id,
                    role=role,
                    name=name,
                    content=[TextContent(text=text)],
                    created_at=start + timedelta(minutes=n),
                )
                for n, (role, name, text) in enumerate(said)
            ],
        )
    return agent


def archive_of(db: Database, org: Organization, name: str, texts: list[str]) -> Archive:
    """An archive of `texts` as passages, a minute apart, each embedded as indexed."""
    with db.transaction() as conn:
        made = archives.create_archive(conn, Archive(organization_id=org.id, name=name))
        for n, text in enumerate(texts):
            at = NOW + timedelta(minutes=n)
            archives.insert_passage(
                conn,
                Passage(
                    organization_id=org.id,
                    archive_id=made.id,
                    text=text,
                    embedding=EMBED.embed([indexed_text(text, at)])[0],
                    created_at=at,
                ),
            )
    return made


def words(db: Database, org: Organization, agent_id: str, query: str, **kw: object) -> list[str]:
    """Recall by words alone (no vector), best first."""
    with db.connection() as conn:
        found = hybrid_messages(conn, org.id, agent_id, query, None, **kw)  # type: ignore[arg-type]
    return [m.text for m, _ in found]


def test_any_query_word_finds_a_message_and_rarer_words_weigh_more(
    db: Database, org: Organization
) -> None:
    agent = with_history(
        db,
        org,
        [
            ("user", None, "I had a good time at the lake today"),
            ("assistant", None, "Sounds like a good time"),
            ("user", None, "We had a good time"),
            ("user", None, "My sister adopted a puppy named Biscuit"),
        ],
    )
    # A natural-language question: no message holds all its words ("when", "did", "get")
    # but one holds its rare one.
    found = words(db, org, agent.id, "When did my sister get a good puppy?")
    assert found[0] == "My sister adopted a puppy named Biscuit"
    assert len(found) == 4  # "good" and "time"-less messages match on "good" too


def test_a_long_message_does_not_win_by_length(db: Database, org: Organization) -> None:
    rambling = "Biscuit " + " ".join(f"filler{n}" for n in range(80))
    agent = with_history(
        db, org, [("user", None, rambling), ("user", None, "Biscuit is the puppy's name")]
    )
    assert words(db, org, agent.id, "Biscuit")[0] == "Biscuit is the puppy's name"


def test_the_speaker_and_the_day_are_searchable(db: Database, org: Organization) -> None:
    agent = with_history(
        db,
        org,
        [
            ("user", "Caroline", "I researched adoption agencies"),
            ("assistant", "Melanie", "I researched pottery classes"),
        ],
    )
    # The question names the speaker, whom her own words never name.
    assert words(db, org, agent.id, "What did Caroline research?")[0] == (
        "I researched adoption agencies"
    )
    assert words(db, org, agent.id, "What happened in November 2026?")  # the day is indexed
    # The words shown are the message's own; the same context is what gets embedded.
    with db.connection() as conn:
        row = conn.execute(
            "SELECT to_tsvector('english', cairn_indexed_text(%s, %s, %s))::text AS sql,"
            " to_tsvector('english', %s)::text AS app",
            (NOW, "Caroline", "hi", indexed_text("hi", NOW, "Caroline")),
        ).fetchone()
    assert row is not None and row["sql"] == row["app"]


def test_a_reply_is_found_by_the_question_before_it(db: Database, org: Organization) -> None:
    agent = with_history(
        db,
        org,
        [
            ("user", None, "The kids painted a sunset over the harbour"),
            ("assistant", None, "Wow, they must be so proud, it looks lovely"),
            ("user", None, "We went swimming"),
        ],
    )
    lent = words(db, org, agent.id, "sunset painting harbour", limit=3)
    alone = words(
        db, org, agent.id, "sunset painting harbour", limit=3, ranking=Ranking(neighbour_words=0)
    )
    reply = "Wow, they must be so proud, it looks lovely"
    assert lent[:2] == ["The kids painted a sunset over the harbour", reply]
    assert reply not in alone  # found only through the question it answers


def test_vectors_and_words_are_fused_and_each_mode_uses_its_half(
    db: Database, org: Organization
) -> None:
    agent = make_agent(db, org)
    texts = ["green tea every morning", "the train leaves at nine", "quarterly report due"]
    archive = archive_of(db, org, "a", texts)
    with db.transaction() as conn:
        archives.attach_archive(conn, org.id, archive.id, agent.id)
    query = "tea in the morning"
    vector = EMBED.embed([query])[0]
    with db.connection() as conn:
        both = search_passages(conn, org.id, archive.id, query, vector, limit=3)
        vector_only = search_passages(
            conn, org.id, archive.id, query, vector, limit=3, ranking=Ranking(lexical=False)
        )
        words_only = search_passages(conn, org.id, archive.id, query, None, limit=3)
    assert both[0][0].text == "green tea every morning"
    assert both[0][1].fts_rank == 1 and both[0][1].vector_rank is not None
    assert all(hit.fts_rank is None for _, hit in vector_only)
    assert len(vector_only) == 3  # every passage has a vector
    # by words, one passage matches; the one written after it comes along as its neighbour
    assert [(p.text, hit.fts_rank) for p, hit in words_only] == [
        ("green tea every morning", 1),
        ("the train leaves at nine", None),
    ]
    assert all(hit.vector_rank is None for _, hit in words_only)


def test_a_query_of_a_whole_document_is_searched_by_its_first_words(
    db: Database, org: Organization
) -> None:
    agent = with_history(db, org, [("user", None, "Biscuit is the puppy's name")])
    flood = "Biscuit " + " ".join(f"word{n}" for n in range(5_000))
    assert words(db, org, agent.id, flood) == ["Biscuit is the puppy's name"]
    late = " ".join(f"word{n}" for n in range(5_000)) + " Biscuit"
    assert words(db, org, agent.id, late) == []  # past the words searched


def test_bm25s_n_and_average_length_are_kept_by_the_writes_and_equal_the_count(
    db: Database, org: Organization
) -> None:
    """An agent's searchable messages and their lengths' sum are BM25's N and average
    length, kept on its row by the writes (counting at every search grew with the whole
    history); through inserts, a message with no text, an edit to nothing and back, an edit
    to longer words, a rewind and its undo, the kept numbers are the counted ones, and the
    words weigh the same as when a filter makes the search count them."""
    from cairn.store import history
    from cairn.store.search import message_search
    from cairn.store.search import words as words_half

    said = [("user", None, f"note {n} about the lake") for n in range(6)]
    agent = with_history(db, org, [*said, ("tool", None, "")])

    def kept_and_counted() -> tuple[int, int]:
        with db.connection() as conn:
            row = conn.execute(
                "SELECT searchable_messages AS kept, searchable_length AS kept_length,"
                " (SELECT count(*) FROM messages WHERE agent_id = %(a)s AND search_text <> ''"
                "  AND rewound_at IS NULL) AS n,"
                " (SELECT sum(length(fts)) FROM messages WHERE agent_id = %(a)s"
                "  AND search_text <> '' AND rewound_at IS NULL) AS length"
                " FROM agents WHERE id = %(a)s",
                {"a": agent.id},
            ).fetchone()
        assert row is not None
        assert row["kept_length"] == (row["length"] or 0), "the kept length is the sum"
        return row["kept"], row["n"]

    def weights(**filters: object) -> tuple[list[float], float]:
        with db.connection() as conn:
            found = message_search(org.id, agent.id, **filters)  # type: ignore[arg-type]
            weighed = words_half(conn, found, "lake note 3")
            return weighed.idfs, weighed.avgdl

    assert kept_and_counted() == (6, 6)
    with db.transaction() as conn:
        listed = messages.list_for_agent(conn, org.id, agent.id)
        first = next(m for m in listed if m.text == "note 0 about the lake")
        messages.edit(conn, first.model_copy(update={"content": [TextContent(text="")]}))
    assert kept_and_counted() == (5, 5)
    longer = "note 0 about the lake, its herons, reeds, boats and the old mill"
    with db.transaction() as conn:
        messages.edit(conn, first.model_copy(update={"content": [TextContent(text=longer)]}))
    assert kept_and_counted() == (6, 6)
    long_ago = datetime(2000, 1, 1, tzinfo=UTC)
    assert weights() == weights(start=long_ago)
    with db.transaction() as conn:
        messages.edit(conn, first)
        window = [
            m.id for m in listed if m.text in {"note 0 about the lake", "note 1 about the lake"}
        ]
        history.mark_rewound(conn, org.id, agent.id, window)
    assert kept_and_counted() == (2, 2)
    assert weights() == weights(start=long_ago)  # kept N, counted N: the same weights
    with db.transaction() as conn:
        history.mark_rewound(conn, org.id, agent.id, [m.id for m in listed])
    assert kept_and_counted() == (6, 6)
    assert weights() == weights(start=long_ago)


def test_an_archives_n_and_average_length_are_kept_by_its_writes(
    db: Database, org: Organization
) -> None:
    """archive_stats keeps an archive's passages and their lengths' sum as inserts and
    deletions change them; a filtered search counts its own, and the words weigh the same."""
    from cairn.store.search import passage_search
    from cairn.store.search import words as words_half

    texts = ["green tea every morning", "the train leaves at nine", "tea, tea and more tea"]
    with db.transaction() as conn:
        archive = archives.create_archive(conn, Archive(organization_id=org.id, name="a"))
        stored = [
            archives.insert_passage(
                conn, Passage(organization_id=org.id, archive_id=archive.id, text=t)
            )[0]
            for t in texts
        ]

    def kept_and_counted() -> tuple[tuple[int, int], tuple[int, int]]:
        with db.connection() as conn:
            row = conn.execute(
                "SELECT s.passages, s.passage_length,"
                " (SELECT count(*) FROM passages WHERE archive_id = %(a)s) AS n,"
                " (SELECT coalesce(sum(length(fts)), 0) FROM passages"
                "  WHERE archive_id = %(a)s) AS length"
                " FROM archive_stats s WHERE s.archive_id = %(a)s",
                {"a": archive.id},
            ).fetchone()
        assert row is not None
        return (row["passages"], row["passage_length"]), (row["n"], row["length"])

    def weights(**filters: object) -> tuple[list[float], float]:
        with db.connection() as conn:
            found = passage_search(org.id, archive.id, **filters)  # type: ignore[arg-type]
            weighed = words_half(conn, found, "tea in the morning")
            return weighed.idfs, weighed.avgdl

    kept, counted = kept_and_counted()
    assert kept == counted and kept[0] == 3 and kept[1] > 3
    long_ago = datetime(2000, 1, 1, tzinfo=UTC)
    assert weights() == weights(start=long_ago)
    with db.transaction() as conn:
        archives.delete_passage(conn, org.id, stored[1].id)
    kept, counted = kept_and_counted()
    assert kept == counted and kept[0] == 2
    assert weights() == weights(start=long_ago)


def test_a_scope_that_is_a_small_share_of_its_table_compares_its_own_rows(
    db: Database, org: Organization
) -> None:
    """The meaning half walks the HNSW index every archive shares, unless finding its
    candidates there would walk past too many other archives' rows (a filtered scan slows,
    and an iterative one stops short at hnsw.max_scan_tuples): then it compares the
    archive's own rows, exactly. The decision reads the archive's kept count against the
    table's statistics; both ways find the same passages here, where HNSW is exact."""
    from cairn.store.search import exact_vectors, fused, passage_search
    from cairn.store.search import words as words_half

    notes = [f"note {n}: the heron by the lake, day {n}" for n in range(20)]
    small = archive_of(db, org, "small", notes)
    archive_of(db, org, "large", [f"ledger line {n}: invoice {n * 7} paid" for n in range(400)])
    with db.connection() as conn:
        conn.execute("ANALYZE passages")
    query = "a heron at the lake"
    vector = EMBED.embed([query])[0]
    found = passage_search(org.id, small.id)
    with db.connection() as conn:
        weighed = words_half(conn, found, query)
    assert weighed.n == 20 and weighed.table_rows >= 420
    # 50 candidates x 420 rows / 20 = 1,050 index entries walked: under the default budget
    assert not exact_vectors(weighed, Ranking())
    strict = Ranking(hnsw_walk=500)
    assert exact_vectors(weighed, strict)
    assert not exact_vectors(weighed._replace(n=0), strict)  # no count: the index
    assert not exact_vectors(weighed._replace(table_rows=0), strict)  # no statistics yet

    def plan(ranking: Ranking) -> str:
        statement, values = fused(found, weighed, vector, ranking, limit=10)
        with db.connection() as conn:
            rows = conn.execute(b"EXPLAIN " + statement.as_bytes(conn), values).fetchall()
        return " ".join(str(r) for r in rows)

    assert "passages_embedding_384" in plan(Ranking())  # the shared HNSW index
    assert "passages_embedding_384" not in plan(strict)  # the archive's own rows
    with db.connection() as conn:
        by_index = search_passages(conn, org.id, small.id, query, vector, limit=10)
        by_rows = search_passages(conn, org.id, small.id, query, vector, limit=10, ranking=strict)
    # every passage is a candidate of each half here: the same passages, fused the same
    assert [p.id for p, _ in by_rows] == [p.id for p, _ in by_index]
    # and the exact half ranks them by their true cosine (HNSW's relaxed order may not)
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT id FROM passages WHERE archive_id = %s ORDER BY embedding <=> %s::vector, id",
            (small.id, "[" + ",".join(map(str, vector)) + "]"),
        ).fetchall()
    truth = {r["id"]: rank for rank, r in enumerate(rows, start=1)}
    assert [(p.id, h.vector_rank) for p, h in by_rows] == [(p.id, truth[p.id]) for p, _ in by_rows]


def test_a_search_is_prepared_once_and_planned_for_its_own_values(
    db: Database, org: Organization, pg_dsn: str
) -> None:
    """Where the connection prepares statements, a search's two statements are parsed once
    and still planned for each search's values: a generic plan misjudges the candidates."""
    agent = with_history(
        db, org, [("user", None, f"turn {n} about puppies and tea") for n in range(6)]
    )
    query = "puppies and tea"
    one = Database(pg_dsn, max_size=1)  # one connection: what it prepared stays on it
    try:
        found = []
        for _ in range(4):
            with one.connection() as conn:
                vector = EMBED.embed([query])[0]
                hits = hybrid_messages(conn, org.id, agent.id, query, vector, limit=6)
            found.append([(m.id, hit.score) for m, hit in hits])
        with one.connection() as conn:
            plans = conn.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                " WHERE statement LIKE '%%lexical_near%%' OR statement LIKE '%%WITH terms AS%%'"
            ).fetchall()
    finally:
        one.close()
    assert len(found[0]) == 6 and all(f == found[0] for f in found)
    assert len(plans) == 2  # the words' statement and the fusion, each prepared once
    assert all(p["generic_plans"] == 0 and p["custom_plans"] >= 1 for p in plans)


def embed_unembedded(db: Database, org: Organization, agent_id: str, *, index_from: int) -> None:
    """What an embedding job writes for the agent's messages without a vector yet."""
    with db.transaction() as conn:
        found = messages.to_embed(conn, org.id, agent_id, 100)
        assert found is not None
        vectors = EMBED.embed([text for _, text in found.texts])
        pairs = [(i, v) for (i, _), v in zip(found.texts, vectors, strict=True)]
        messages.set_embeddings(conn, org.id, agent_id, EMBED.model, pairs, index_from=index_from)


def indexed_rows_read(plan: str) -> bool:
    """Whether the meaning half's branch over the index's rows ran: the scan under its gate
    (`Scope.index_holds`, a one-time filter), by whichever index the planner took (HNSW,
    or for a handful of rows `messages_indexed` and a sort)."""
    lines = plan.splitlines()
    gate = next(i for i, line in enumerate(lines) if "One-Time Filter: (InitPlan" in line)
    scan = next(line for line in lines[gate + 1 :] if " on messages " in line)
    return "never executed" not in scan


def test_an_agents_vectors_enter_the_hnsw_index_only_once_it_is_big_enough(
    db: Database, org: Organization
) -> None:
    """A message's vector costs an HNSW insert only once its agent holds `index_from`
    searchable messages (migration 0054); before, search compares the agent's rows
    exactly. The batch that finds the agent past it moves its earlier vectors into the
    index too, once. Rows written outside the index later (a job that read the count
    before the agent passed it) are still found: compared exactly beside the index's walk,
    each vector ranked by its true cosine."""
    from cairn.store.search import fused, message_search
    from cairn.store.search import words as words_half

    topics = ["sailing", "violin", "sourdough", "chess", "orchids", "marathon", "pottery"]
    head = [("user", None, f"my {t} practice went well this week") for t in topics]
    agent = with_history(db, org, head)
    small = with_history(db, org, head[:3])

    def embedded(**index_from: int) -> dict[tuple[str, bool], int]:
        for one in (agent, small):
            embed_unembedded(db, org, one.id, **index_from)
        with db.connection() as conn:
            rows = conn.execute(
                "SELECT agent_id, indexed, count(*) AS n FROM messages"
                " WHERE embedding IS NOT NULL GROUP BY 1, 2"
            ).fetchall()
        return {(r["agent_id"], r["indexed"]): r["n"] for r in rows}

    # 7 searchable: none in the index
    assert embedded(index_from=10) == {(agent.id, False): 7, (small.id, False): 3}
    tail = [("user", None, f"the {t} club meets on thursday") for t in topics]
    with_history(db, org, tail, agent=agent, start=NOW + timedelta(hours=1))
    # 14: these go into the index, and the first 7 with them
    assert embedded(index_from=10) == {(agent.id, True): 14, (small.id, False): 3}
    late = [("user", None, f"the {t} workshop is on friday") for t in topics[:3]]
    with_history(db, org, late, agent=agent, start=NOW + timedelta(hours=2))
    # written by a job that read the count before the agent passed the mark
    assert embedded(index_from=10**9) == {
        (agent.id, True): 14,
        (agent.id, False): 3,
        (small.id, False): 3,
    }
    with_history(db, org, [("user", None, "one more")], agent=agent, start=NOW + timedelta(hours=3))
    # the earlier vectors move once: these three stay outside, compared
    assert embedded(index_from=10)[(agent.id, False)] == 3
    with db.connection() as conn:
        definition = conn.execute(
            "SELECT pg_get_indexdef('messages_embedding_384'::regclass) AS d"
        ).fetchone()
    assert definition is not None and "WHERE (indexed AND" in definition["d"]

    # the index's walk whatever the table's statistics say (other tests' rows counted in
    # them would have `exact_vectors` compare every row instead)
    meaning = Ranking(lexical=False, hnsw_walk=float("inf"))

    def search(agent_id: str, query: str) -> tuple[list[tuple[str, int | None]], str]:
        found = message_search(org.id, agent_id)
        vector = EMBED.embed([query])[0]
        with db.connection() as conn:
            weighed = words_half(conn, found, query, meaning)
            statement, values = fused(found, weighed, vector, meaning, limit=18)
            plan = conn.execute(
                b"EXPLAIN (ANALYZE, COSTS OFF) " + statement.as_bytes(conn), values
            ).fetchall()
            hits = hybrid_messages(conn, org.id, agent_id, query, vector, limit=18, ranking=meaning)
            truth = conn.execute(
                "SELECT id FROM messages WHERE agent_id = %s AND embedding IS NOT NULL"
                " ORDER BY embedding <=> %s::vector, id",
                (agent_id, "[" + ",".join(map(str, vector)) + "]"),
            ).fetchall()
        rank = {r["id"]: n for n, r in enumerate(truth, start=1)}
        assert [(m.id, h.vector_rank) for m, h in hits] == [(m.id, rank[m.id]) for m, _ in hits]
        return [(m.text, h.vector_rank) for m, h in hits], "\n".join(
            str(r["QUERY PLAN"]) for r in plan
        )

    found, plan = search(agent.id, "the violin workshop on friday")
    assert found[0] == ("the violin workshop is on friday", 1)  # a row compared
    assert len([v for _, v in found if v]) == 18  # every vector, from both halves
    assert indexed_rows_read(plan), plan
    found, _ = search(agent.id, "the orchids club on thursday")
    assert found[0] == ("the orchids club meets on thursday", 1)  # a row of the index
    found, _ = search(agent.id, "sourdough practice")
    assert found[0] == ("my sourdough practice went well this week", 1)  # moved there
    # a filter holds on both halves: before the hour, only the first rows (not indexed)
    with db.connection() as conn:
        early = hybrid_messages(
            conn,
            org.id,
            agent.id,
            "the orchids club on thursday",
            EMBED.embed(["the orchids club on thursday"])[0],
            end=NOW + timedelta(minutes=30),
            limit=18,
            ranking=meaning,
        )
    assert len(early) == 7 and all(m.text.endswith("went well this week") for m, _ in early)
    assert early[0][0].text == "my orchids practice went well this week"
    # an agent with no row in the index never walks it
    found, plan = search(small.id, "violin practice")
    assert found[0] == ("my violin practice went well this week", 1)
    assert not indexed_rows_read(plan), plan
