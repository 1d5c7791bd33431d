-- The project's own artifacts (the working tree aam runs in), kept in the catalog
-- like a source's so candidates are a query, never a walk. Each project is keyed
-- by its canonical root. The tree's folders and files are recorded with their stat
-- data: a call lstat()s them and re-reads only what moved (docs/search.md).

CREATE TABLE projects (
    id          INTEGER PRIMARY KEY,
    root        TEXT    NOT NULL UNIQUE,          -- canonical absolute path
    version     INTEGER NOT NULL DEFAULT 0,       -- bumped by every refresh; a stale writer skips its write
    checked_at  TEXT    NOT NULL
);

-- Every folder walked (and package folders, not walked into), with its mtime:
-- a folder whose mtime moved is listed again. mtime_ns = -1: check again next call.
CREATE TABLE project_dirs (
    project_id  INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    path        TEXT    NOT NULL,                 -- relative to the root; '' is the root
    mtime_ns    INTEGER NOT NULL,
    PRIMARY KEY (project_id, path)
) WITHOUT ROWID;

-- Every file the detection rules see, with the stat data that tells an edit.
CREATE TABLE project_files (
    project_id  INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    path        TEXT    NOT NULL,
    size        INTEGER NOT NULL,
    mtime_ns    INTEGER NOT NULL,                 -- -1: re-read next call (written too recently to trust)
    inode       INTEGER NOT NULL,
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
