-- Every file an install wrote, with its blake3 (the package copy, deployed files,
-- and `FILE#name type` sections), keyed by the project (or home) root: the
-- catalog's mirror of each lock file, so cross-project audits are SQL.
CREATE TABLE install_files (
    project_root  TEXT NOT NULL,
    package       TEXT NOT NULL,
    path          TEXT NOT NULL,
    blake3        TEXT NOT NULL,
    PRIMARY KEY (project_root, package, path)
) WITHOUT ROWID;
