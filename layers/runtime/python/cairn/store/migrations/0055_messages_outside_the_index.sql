-- An agent's searchable messages outside the HNSW index (migration 0054), by agent: the
-- meaning half of a search compares these one by one. Without it, that half read every
-- row of a big agent to find the few outside (5.6 ms of a search at 10,000 messages, none
-- of them outside); with it, a big agent's are none and a small agent's are all its rows.
CREATE INDEX messages_outside_the_index ON messages (agent_id)
    WHERE NOT indexed AND search_text <> '' AND rewound_at IS NULL;
