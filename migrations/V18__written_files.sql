-- Every file an install wrote on this machine, as (lock key, blake3), in any
-- project, kept when the install goes: what proves a file on disk is aam's to
-- remove (aam wrote those bytes at that path), after a branch switch brought an
-- older lock back, in a clone or a moved project. Bytes alone prove nothing: a
-- package can bring a copy of a user's file into the object store.
CREATE TABLE written_files (
    path    TEXT NOT NULL,
    blake3  TEXT NOT NULL,
    PRIMARY KEY (path, blake3)
) WITHOUT ROWID;

INSERT OR IGNORE INTO written_files (path, blake3) SELECT path, blake3 FROM install_files;
