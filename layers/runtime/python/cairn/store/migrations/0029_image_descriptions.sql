-- What a vision model said an image shows, by the image's content hash, per organization
-- (one organization never learns what another sent): a model without vision is given the
-- description instead of the image, made once per image.
CREATE TABLE image_descriptions (
    organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    content_hash     text NOT NULL,
    description      text NOT NULL,
    model            text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, content_hash)
);
