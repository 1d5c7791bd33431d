-- The package folders, archives and local repositories outside a project that
-- packages were installed from on this machine, by absolute path. A lock file
-- can name any path, and a cloned one is written by someone else: a restore
-- reads a place outside the project only when it is here (or, for a
-- repository, is a registered source's). Installs made before this table
-- existed left no record: installing from the place once again records it.
CREATE TABLE install_places (
    path     TEXT NOT NULL PRIMARY KEY,
    used_at  TEXT NOT NULL   -- RFC 3339: the last install or restore from it
) WITHOUT ROWID;
