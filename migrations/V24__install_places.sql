-- The package folders, archives and local repositories outside a project that
-- packages were installed from on this machine, by absolute path and kind. A
-- lock file can name any path, and a cloned one is written by someone else: a
-- restore reads a place outside the project only as what it is here (or, for a
-- repository, a registered source's). Installs made before this table existed
-- left no record: installing from the place once again records it.
CREATE TABLE install_places (
    path     TEXT NOT NULL,
    kind     TEXT NOT NULL CHECK (kind IN ('folder', 'archive', 'repository')),
    used_at  TEXT NOT NULL,   -- RFC 3339: the last install from it
    PRIMARY KEY (path, kind)
) WITHOUT ROWID;
