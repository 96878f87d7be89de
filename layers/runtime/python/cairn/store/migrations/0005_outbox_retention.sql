-- The sweeper deletes outbox rows sent long ago (CAIRN_OUTBOX_RETENTION_DAYS); this finds
-- them without reading the whole table every minute.
CREATE INDEX outbox_sent ON outbox (sent_at) WHERE sent_at IS NOT NULL;
