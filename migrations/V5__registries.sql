-- Packages published to configured registries, mirrored into the catalog so that
-- search, resolution and audits are queries (the registry folder stays the truth
-- for archives; `aam registry add` and `aam pkg publish` keep this mirror in step).

CREATE TABLE registry_packages (
    id              INTEGER PRIMARY KEY,
    registry        TEXT    NOT NULL,
    name            TEXT    NOT NULL,
    description     TEXT,
    latest_version  TEXT    NOT NULL,
    artifact_types  TEXT    NOT NULL,   -- comma-separated kinds in the latest version
    summary         TEXT    NOT NULL,   -- artifact names and descriptions, for search
    UNIQUE (registry, name)
);

CREATE TABLE registry_versions (
    package_id  INTEGER NOT NULL REFERENCES registry_packages (id) ON DELETE CASCADE,
    version     TEXT    NOT NULL,
    entry_json  TEXT    NOT NULL,       -- checksum, size, archive, artifacts, dependencies, published_at
    PRIMARY KEY (package_id, version)
) WITHOUT ROWID;

CREATE TABLE registry_tags (
    package_id  INTEGER NOT NULL REFERENCES registry_packages (id) ON DELETE CASCADE,
    tag         TEXT    NOT NULL,
    version     TEXT    NOT NULL,
    PRIMARY KEY (package_id, tag)
) WITHOUT ROWID;
