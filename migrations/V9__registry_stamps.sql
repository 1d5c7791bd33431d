-- What a registry's index.json was (size, times, inode) when the catalog last
-- mirrored it: a command that reads registry packages mirrors a registry again
-- when its index no longer matches, so versions published from another machine
-- or AAM_HOME, and a mirror an earlier concurrent publish raced, are seen.
CREATE TABLE registry_mirrors (
    registry     TEXT PRIMARY KEY,
    index_stamp  TEXT NOT NULL
) WITHOUT ROWID;
