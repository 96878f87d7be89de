-- Model providers an organization brings its own key for (Letta's BYOK providers). The key
-- is never stored in plain: `key_ref` names the Secrets Manager secret holding it (AWS), or
-- `key_sealed` holds it sealed with the local envelope key (AES-GCM, bound to the row).
CREATE TABLE providers (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name             text NOT NULL,
    provider_type    text NOT NULL,
    base_url         text,
    region           text,
    api_version      text,
    key_ref          text,
    key_sealed       bytea,
    key_hint         text NOT NULL DEFAULT '',
    created_by_id    text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, name)
);
CREATE INDEX providers_org_created ON providers (organization_id, created_at, id);
