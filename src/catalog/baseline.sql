-- Generated from migrations/ by `the_baseline_is_what_the_migrations_build`:
-- AAM_UPDATE_GENERATED=1 cargo test --lib baseline
-- What the migrations build from nothing, run once to make a new catalog.

CREATE TABLE refinery_schema_history(
             version int4 PRIMARY KEY,
             name VARCHAR(255),
             applied_on VARCHAR(255),
             checksum VARCHAR(255));

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
, packaged_skill_count INTEGER NOT NULL DEFAULT 0, packaged_agent_count INTEGER NOT NULL DEFAULT 0, packaged_prompt_count INTEGER NOT NULL DEFAULT 0, packaged_instruction_count INTEGER NOT NULL DEFAULT 0, skill_census TEXT, artifact_rows INTEGER NOT NULL DEFAULT 0);

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
    removed_commit_id       INTEGER REFERENCES commits (id), main_sha256 TEXT,
    UNIQUE (source_id, kind, path)
);

CREATE INDEX artifacts_name ON artifacts (name COLLATE NOCASE);

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
    size         INTEGER NOT NULL, sha256 TEXT,
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

CREATE TABLE dismissed_defaults (
    name          TEXT PRIMARY KEY,
    dismissed_at  TEXT NOT NULL
);

CREATE TABLE meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

CREATE TABLE packages (
    id               INTEGER PRIMARY KEY,
    name             TEXT    NOT NULL,
    version          TEXT    NOT NULL,
    description      TEXT,
    manifest_json    TEXT    NOT NULL,
    origin           TEXT    NOT NULL CHECK (origin IN ('project', 'source', 'registry')),
    provenance_json  TEXT,
    archive_blake3   TEXT,
    created_at       TEXT    NOT NULL,
    UNIQUE (name, version)
);

CREATE TABLE package_artifacts (
    package_id    INTEGER NOT NULL REFERENCES packages (id) ON DELETE CASCADE,
    artifact_id   INTEGER REFERENCES artifacts (id) ON DELETE SET NULL,  -- a catalog artifact
    project_root  TEXT,                                                   -- or a project's own artifact
    kind          TEXT    NOT NULL CHECK (kind IN ('skill', 'agent', 'prompt', 'instruction')),
    name          TEXT    NOT NULL,
    path          TEXT    NOT NULL
, source_url TEXT);

CREATE INDEX package_artifacts_artifact ON package_artifacts (artifact_id) WHERE artifact_id IS NOT NULL;

CREATE INDEX package_artifacts_project ON package_artifacts (project_root, kind, path) WHERE project_root IS NOT NULL;

CREATE TABLE installs (
    id             INTEGER PRIMARY KEY,
    project_root   TEXT    NOT NULL,
    package_id     INTEGER NOT NULL REFERENCES packages (id) ON DELETE CASCADE,
    platform       TEXT    NOT NULL,
    source_commit  TEXT,
    installed_at   TEXT    NOT NULL,
    UNIQUE (project_root, package_id, platform)
);

CREATE INDEX installs_project ON installs (project_root);

CREATE TABLE artifact_links (
    artifact_id  INTEGER NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    path         TEXT    NOT NULL,
    PRIMARY KEY (artifact_id, path)
) WITHOUT ROWID;

CREATE INDEX artifact_links_path ON artifact_links (path);

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

CREATE TABLE install_files (
    project_root  TEXT NOT NULL,
    package       TEXT NOT NULL,
    path          TEXT NOT NULL,
    blake3        TEXT NOT NULL,
    PRIMARY KEY (project_root, package, path)
) WITHOUT ROWID;

CREATE TABLE artifact_findings (
    artifact_id  INTEGER NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    path         TEXT    NOT NULL,                 -- repository path of the file
    rule         TEXT    NOT NULL,                 -- rule id, e.g. `hidden-bidi`
    severity     TEXT    NOT NULL CHECK (severity IN ('info', 'warn', 'high')),
    line         INTEGER,                          -- 1-based; NULL for whole-file findings
    excerpt      TEXT    NOT NULL                  -- invisible characters shown as <U+XXXX>
);

CREATE INDEX artifact_findings_artifact ON artifact_findings (artifact_id, path);

CREATE INDEX artifact_findings_rule ON artifact_findings (rule);

CREATE TABLE registry_mirrors (
    registry     TEXT PRIMARY KEY,
    index_stamp  TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE projects (
    id          INTEGER PRIMARY KEY,
    root        TEXT    NOT NULL UNIQUE,          -- canonical absolute path
    version     INTEGER NOT NULL DEFAULT 0,       -- bumped by every refresh; a stale writer skips its write
    checked_at  TEXT    NOT NULL
, artifact_count INTEGER NOT NULL DEFAULT 0);

CREATE TABLE project_dirs (
    project_id  INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    path        TEXT    NOT NULL,                 -- relative to the root; '' is the root
    mtime_ns    INTEGER NOT NULL,
    PRIMARY KEY (project_id, path)
) WITHOUT ROWID;

CREATE TABLE project_files (
    project_id  INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    path        TEXT    NOT NULL,
    size        INTEGER NOT NULL,
    mtime_ns    INTEGER NOT NULL,                 -- -1: re-read next call (written too recently to trust)
    inode       INTEGER NOT NULL, ctime_ns INTEGER NOT NULL DEFAULT -1,
    PRIMARY KEY (project_id, path)
) WITHOUT ROWID;

CREATE TABLE project_artifacts (
    project_id        INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind              TEXT    NOT NULL CHECK (kind IN ('skill', 'agent', 'prompt', 'instruction')),
    path              TEXT    NOT NULL,
    name              TEXT    NOT NULL,
    description       TEXT,
    main_file         TEXT    NOT NULL,
    has_vendor_agent  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, kind, path)
) WITHOUT ROWID;

CREATE TABLE artifact_versions (
    id                  INTEGER PRIMARY KEY,
    artifact_id         INTEGER NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    content_digest      TEXT    NOT NULL,      -- the artifact's content_digest at this version
    file_count          INTEGER NOT NULL,      -- distinct blake3 digests among its files
    first_commit_id     INTEGER NOT NULL REFERENCES commits (id) ON DELETE CASCADE,  -- first indexed with this content
    replaced_commit_id  INTEGER REFERENCES commits (id) ON DELETE SET NULL, digests TEXT NOT NULL DEFAULT '[]',          -- changed or removed here; NULL = current
    UNIQUE (artifact_id, first_commit_id)
);

CREATE INDEX project_artifacts_main_file ON project_artifacts (project_id, main_file);

CREATE TABLE written_files (
    path    TEXT NOT NULL,
    blake3  TEXT NOT NULL,
    PRIMARY KEY (path, blake3)
) WITHOUT ROWID;

CREATE TABLE "artifact_version_files" (
    blake3      TEXT    NOT NULL,
    version_id  INTEGER NOT NULL,                 -- artifact_versions.id
    PRIMARY KEY (blake3, version_id)
) WITHOUT ROWID;

CREATE INDEX package_artifacts_awaiting_source ON package_artifacts (source_url, kind, path)
    WHERE source_url IS NOT NULL;

CREATE TABLE restored_commits (
    cache_key     TEXT    NOT NULL,   -- cache/git/<cache_key>
    commit_id     TEXT    NOT NULL,   -- 40 hex digits
    project_root  TEXT    NOT NULL,   -- where `.aam/aam-lock.yaml` named it
    used_at       TEXT    NOT NULL,   -- RFC 3339: the last restore that took it
    PRIMARY KEY (cache_key, commit_id, project_root)
) WITHOUT ROWID;

CREATE TABLE install_places (
    path     TEXT NOT NULL,
    kind     TEXT NOT NULL CHECK (kind IN ('folder', 'archive', 'repository')),
    used_at  TEXT NOT NULL,   -- RFC 3339: the last install from it
    PRIMARY KEY (path, kind)
) WITHOUT ROWID;

INSERT INTO meta VALUES ('generation', '0');

PRAGMA analysis_limit = 2000;
ANALYZE;
