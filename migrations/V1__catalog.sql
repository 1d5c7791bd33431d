-- Catalog schema v1: git sources, the commits they were indexed at, the artifacts
-- found in them, their files and a per-artifact change log.

CREATE TABLE sources (
    id              INTEGER PRIMARY KEY,
    name            TEXT    NOT NULL UNIQUE,
    kind            TEXT    NOT NULL CHECK (kind IN ('git', 'local')),
    url             TEXT    NOT NULL,              -- credential-free clone URL
    cache_key       TEXT    NOT NULL,              -- cache/git/<cache_key>: <host>/<path>
    ref_name        TEXT,                          -- requested branch, tag or commit; NULL = remote HEAD
    resolved_ref    TEXT,                          -- what ref_name resolved to at the last fetch
    scope_path      TEXT    NOT NULL DEFAULT '',   -- folder the scan is limited to; '' = whole tree
    is_default      INTEGER NOT NULL DEFAULT 0,
    head_commit_id  INTEGER REFERENCES commits (id) ON DELETE SET NULL,
    -- live artifacts per kind, kept in step by every index write
    skill_count        INTEGER NOT NULL DEFAULT 0,
    agent_count        INTEGER NOT NULL DEFAULT 0,
    prompt_count       INTEGER NOT NULL DEFAULT 0,
    instruction_count  INTEGER NOT NULL DEFAULT 0,
    added_at        TEXT    NOT NULL,
    fetched_at      TEXT
);

CREATE TABLE commits (
    id            INTEGER PRIMARY KEY,
    source_id     INTEGER NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    sha           TEXT    NOT NULL,
    tree_sha      TEXT    NOT NULL,                -- tree of the scanned folder at this commit
    committed_at  TEXT,
    indexed_at    TEXT    NOT NULL,
    UNIQUE (source_id, sha)
);

CREATE TABLE artifacts (
    id                      INTEGER PRIMARY KEY,
    source_id               INTEGER NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    kind                    TEXT    NOT NULL CHECK (kind IN ('skill', 'agent', 'prompt', 'instruction')),
    path                    TEXT    NOT NULL,      -- repository path: folder for skills, file otherwise
    name                    TEXT    NOT NULL,
    description             TEXT,
    platform                TEXT,
    main_file               TEXT    NOT NULL,      -- repository path of the file the artifact is read from
    content_path            TEXT    NOT NULL,      -- where its bytes live (differs when main_file is a symlink)
    frontmatter_json        TEXT,
    has_vendor_agent        INTEGER NOT NULL DEFAULT 0,
    warnings_json           TEXT,
    content_digest          TEXT    NOT NULL,      -- blake3 over the artifact's (path, mode, blob id) list
    main_size               INTEGER NOT NULL,
    first_commit_id         INTEGER REFERENCES commits (id),
    last_changed_commit_id  INTEGER REFERENCES commits (id),
    removed_commit_id       INTEGER REFERENCES commits (id),
    UNIQUE (source_id, kind, path)
);
CREATE INDEX artifacts_path ON artifacts (source_id, path);
CREATE INDEX artifacts_content_path ON artifacts (source_id, content_path);
CREATE INDEX artifacts_name ON artifacts (name COLLATE NOCASE);

-- The main file's text (capped), so the search index can be rebuilt from the catalog alone.
CREATE TABLE artifact_texts (
    artifact_id  INTEGER PRIMARY KEY REFERENCES artifacts (id) ON DELETE CASCADE,
    body         TEXT    NOT NULL,
    truncated    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE artifact_files (
    artifact_id  INTEGER NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    path         TEXT    NOT NULL,                 -- repository path
    mode         TEXT    NOT NULL CHECK (mode IN ('file', 'executable', 'symlink')),
    git_blob     TEXT    NOT NULL,
    blake3       TEXT    NOT NULL,
    size         INTEGER NOT NULL,
    PRIMARY KEY (artifact_id, path)
) WITHOUT ROWID;

CREATE TABLE artifact_events (
    id           INTEGER PRIMARY KEY,
    artifact_id  INTEGER NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    commit_id    INTEGER NOT NULL REFERENCES commits (id) ON DELETE CASCADE,
    change       TEXT    NOT NULL CHECK (change IN ('added', 'modified', 'removed')),
    recorded_at  TEXT    NOT NULL
);
CREATE INDEX artifact_events_artifact ON artifact_events (artifact_id);
CREATE INDEX artifact_events_commit ON artifact_events (commit_id);

-- Defaults the user removed: `source enable-defaults` never re-adds them silently.
CREATE TABLE dismissed_defaults (
    name          TEXT PRIMARY KEY,
    dismissed_at  TEXT NOT NULL
);

CREATE TABLE meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('generation', '0');
