"""The two statements of a search (store/search.py runs them), as SQL templates over a
scope's table, filters and order (its `{placeholders}`), and the vector half's pieces."""

# Two statements. The first takes the words: BM25 (every query word may match, rarer ones
# weigh more, a long text does not win by length; a word counts once in a text: on LoCoMo
# it changed no hit@5, and it spares expanding every matched text's words). N and the
# average length are the scope's, kept by the writes (migrations 0045, 0046).
# It needs no embedding, so it runs while the query is embedded (run/backends/search.overlapped).
# N and the average length are the scope's own: each agent's or archive's words weigh as
# they do in its memory. It returns each word's weight and the best texts by words.
WORDS = """
WITH terms AS (  -- each query word, as its own tsquery (stemmed, stop words gone); a query
                 -- of a whole document is searched by its first words, not all
    SELECT t
    FROM unnest(string_to_array(plainto_tsquery('english', %(text)s)::text, ' & '))
         WITH ORDINALITY AS w (t, n)
    WHERE t <> ''
    GROUP BY t ORDER BY min(n) LIMIT %(max_terms)s
),
hits AS (  -- (word, text) for every text holding it: the agent's or archive's postings only
    SELECT terms.t AS term, d.id, length(d.fts)::float8 AS dl
    FROM terms JOIN {table} d ON {scope_d} AND d.fts @@ terms.t::tsquery
),
corpus AS (  -- N and the average length: kept for a whole scope, counted for a filtered one
    SELECT coalesce(sum(n), 0)::float8 AS n,
           coalesce(nullif(sum(total), 0)::float8 / nullif(sum(n), 0), 1) AS avgdl
    FROM ({corpus}) c (n, total)
),
idf AS (
    SELECT term, ln(1 + (c.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
    FROM hits CROSS JOIN corpus c GROUP BY term, c.n
),
top AS (
    SELECT h.id, sum(i.idf) * (%(k1)s + 1)
                 / (1 + %(k1)s * (1 - %(b)s + %(b)s * h.dl / c.avgdl)) AS score
    FROM hits h JOIN idf i USING (term) CROSS JOIN corpus c
    GROUP BY h.id, h.dl, c.avgdl ORDER BY score DESC, h.id LIMIT %(candidates)s
)
SELECT coalesce((SELECT array_agg(term ORDER BY term) FROM idf), '{{}}') AS terms,
       coalesce((SELECT array_agg(idf ORDER BY term) FROM idf), '{{}}') AS idfs,
       (SELECT avgdl FROM corpus) AS avgdl,
       coalesce((SELECT array_agg(id ORDER BY score DESC, id) FROM top), '{{}}') AS top,
       (SELECT n FROM corpus) AS n,
       -- the table's rows, every scope's, as the statistics last counted them (-1: never)
       (SELECT greatest(c.reltuples, 0)::float8 FROM pg_class c
        WHERE c.oid = to_regclass(%(table_name)s)) AS table_rows
"""
# The second takes meaning and fuses: cosine similarity over the embeddings (HNSW), each
# candidate's score in both halves read from its own row (words by their weights from the
# first), lent to by its neighbours, and the two halves fused by their scores scaled to
# [0, 1] (min-max): both are graded, so a strong match in one beats a weak one in both,
# which rank fusion (RRF) throws away (hit@5 0.683 against RRF's 0.639).
FUSED = """
WITH words AS (
    SELECT t::tsquery AS t, idf FROM unnest(%(terms)s::text[], %(idfs)s::float8[]) AS w (t, idf)
),
lexical_top AS (
    SELECT id, rank FROM unnest(%(top)s::text[]) WITH ORDINALITY AS x (id, rank)
),
vector_top AS ({vector_top}),
lexical_near AS (  -- beside the best word matches: a reply found by the question it answers
    SELECT near.id FROM lexical_top l
    JOIN {table} d ON d.id = l.id AND d.organization_id = %(org)s
    CROSS JOIN LATERAL (
        (SELECT p.id FROM {table} p WHERE {scope_p} AND {row_p} < {row_d}
         ORDER BY {desc_p} LIMIT 1)
        UNION ALL
        (SELECT n.id FROM {table} n WHERE {scope_n} AND {row_n} > {row_d}
         ORDER BY {asc_n} LIMIT 1)
    ) near
    WHERE %(nw)s > 0
),
candidates AS (
    SELECT id FROM lexical_top UNION SELECT id FROM vector_top UNION SELECT id FROM lexical_near
),
around AS (
    SELECT d.id, prev.id AS prev_id, next.id AS next_id
    FROM candidates c JOIN {table} d ON d.id = c.id AND d.organization_id = %(org)s
    LEFT JOIN LATERAL (
        SELECT p.id FROM {table} p WHERE {scope_p} AND {row_p} < {row_d}
        ORDER BY {desc_p} LIMIT 1) prev ON true
    LEFT JOIN LATERAL (
        SELECT n.id FROM {table} n WHERE {scope_n} AND {row_n} > {row_d}
        ORDER BY {asc_n} LIMIT 1) next ON true
),
needed AS (  -- the candidates and their neighbours: the texts whose scores are read
    SELECT id FROM around UNION SELECT prev_id FROM around UNION SELECT next_id FROM around
),
known AS (  -- each needed text's score in each half, from its row (read by its key)
    SELECT x.id, k.lexical, k.sim FROM needed x
    CROSS JOIN LATERAL (
        SELECT (SELECT sum(w.idf) FROM words w WHERE d.fts @@ w.t) * (%(k1)s + 1)
                 / (1 + %(k1)s * (1 - %(b)s + %(b)s * length(d.fts) / %(avgdl)s)) AS lexical,
               {sim} AS sim
        FROM {table} d WHERE d.id = x.id AND d.organization_id = %(org)s
        LIMIT 1  -- by its key, each: as a join, the planner read the whole scope for them
    ) k
),
scored AS (
    SELECT a.id,
           coalesce(k0.lexical, 0)
             + %(nw)s * (coalesce(kp.lexical, 0) + %(share)s * coalesce(kn.lexical, 0)) AS lexical,
           k0.sim + %(nm)s * (coalesce(kp.sim, 0) + %(share)s * coalesce(kn.sim, 0)) AS semantic
    FROM around a
    LEFT JOIN known k0 ON k0.id = a.id
    LEFT JOIN known kp ON kp.id = a.prev_id
    LEFT JOIN known kn ON kn.id = a.next_id
),
fused AS (
    SELECT id,
           coalesce(lexical / nullif(max(lexical) OVER (), 0), 0)
           + coalesce((semantic - min(semantic) OVER ())
                      / nullif(max(semantic) OVER () - min(semantic) OVER (), 0), 0) AS score
    FROM scored
),
best AS (SELECT id, score FROM fused ORDER BY score DESC, id LIMIT %(limit)s)
SELECT {columns}, b.score, vt.rank AS vector_rank, lt.rank AS fts_rank
FROM best b
JOIN {table} d ON d.id = b.id AND d.organization_id = %(org)s
LEFT JOIN vector_top vt ON vt.id = b.id
LEFT JOIN lexical_top lt ON lt.id = b.id
ORDER BY b.score DESC, b.id
"""
VECTOR_TOP = """
    SELECT d.id, row_number() OVER (ORDER BY d.embedding::{vt} <=> %(q)s::{vt}) AS rank
    FROM {table} d WHERE {scope_d} AND vector_dims(d.embedding) = %(dim)s
    ORDER BY d.embedding::{vt} <=> %(q)s::{vt} LIMIT %(candidates)s
"""
# The same candidates from the scope's own rows, each compared (exact), never through the
# shared HNSW index: for a scope that is a small share of its table, where a filtered HNSW
# scan walks past the other scopes' rows and an iterative one stops short at
# hnsw.max_scan_tuples (store/search.py, `exact_vectors`). The fence (OFFSET 0) keeps the
# order by distance out of the scan.
VECTOR_TOP_EXACT = """
    SELECT x.id, row_number() OVER (ORDER BY x.distance, x.id) AS rank FROM (
        SELECT d.id, d.embedding::{vt} <=> %(q)s::{vt} AS distance
        FROM {table} d WHERE {scope_d} AND vector_dims(d.embedding) = %(dim)s
        OFFSET 0
    ) x ORDER BY x.distance, x.id LIMIT %(candidates)s
"""
# For a scope whose rows enter the HNSW index only past a size (messages: migration 0054),
# the rows outside compared exactly (an agent's first VECTOR_INDEX_FROM at most) and the
# rest through the index; the index is walked only when the agent has rows in it (a walk
# finding none would read up to hnsw.max_scan_tuples entries). Whether it has is asked of
# the agent, not of the search's filters: a date no indexed row matches would have the
# question read every one of them.
VECTOR_TOP_SPLIT = """
    SELECT x.id, row_number() OVER (ORDER BY x.distance, x.id) AS rank FROM (
        (SELECT d.id, d.embedding::{vt} <=> %(q)s::{vt} AS distance
         FROM {table} d WHERE {scope_d} AND NOT {indexed_d} AND vector_dims(d.embedding) = %(dim)s
         OFFSET 0)
        UNION ALL
        (SELECT d.id, d.embedding::{vt} <=> %(q)s::{vt} AS distance
         FROM {table} d WHERE {scope_d} AND {indexed_d} AND vector_dims(d.embedding) = %(dim)s
           AND {index_holds}
         ORDER BY d.embedding::{vt} <=> %(q)s::{vt} LIMIT %(candidates)s)
    ) x ORDER BY x.distance, x.id LIMIT %(candidates)s
"""
# Exact cosine, for the candidates and their neighbours only (a few hundred rows at most).
SIM = """CASE WHEN vector_dims(d.embedding) = %(dim)s
              THEN 1 - (d.embedding::{vt} <=> %(q)s::{vt}) END"""
NO_VECTOR_TOP = "SELECT NULL::text AS id, NULL::bigint AS rank WHERE false"
NO_SIM = "NULL::float8"
