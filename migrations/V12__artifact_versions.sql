-- Every version of every artifact the catalog has ever indexed, kept when an
-- update replaces or removes the artifact, with the distinct blake3 digests of
-- its files (symlinks left out): `aam inventory` finds the origin of a copy
-- made by hand by looking its files' digests up here.
CREATE TABLE artifact_versions (
    id                  INTEGER PRIMARY KEY,
    artifact_id         INTEGER NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    content_digest      TEXT    NOT NULL,      -- the artifact's content_digest at this version
    file_count          INTEGER NOT NULL,      -- distinct blake3 digests among its files
    first_commit_id     INTEGER NOT NULL REFERENCES commits (id) ON DELETE CASCADE,  -- first indexed with this content
    replaced_commit_id  INTEGER REFERENCES commits (id) ON DELETE SET NULL,          -- changed or removed here; NULL = current
    UNIQUE (artifact_id, first_commit_id)
);

CREATE TABLE artifact_version_files (
    blake3      TEXT    NOT NULL,
    version_id  INTEGER NOT NULL REFERENCES artifact_versions (id) ON DELETE CASCADE,
    PRIMARY KEY (blake3, version_id)
) WITHOUT ROWID;
CREATE INDEX artifact_version_files_version ON artifact_version_files (version_id);

-- What the catalog holds today is the first history: each artifact's last
-- recorded content, since the commit it last changed at.
INSERT INTO artifact_versions (artifact_id, content_digest, file_count, first_commit_id, replaced_commit_id)
SELECT a.id, a.content_digest,
       (SELECT count(DISTINCT f.blake3) FROM artifact_files f WHERE f.artifact_id = a.id AND f.mode != 'symlink'),
       a.last_changed_commit_id, a.removed_commit_id
FROM artifacts a
WHERE a.last_changed_commit_id IS NOT NULL AND a.removed_commit_id IS NULL;

INSERT OR IGNORE INTO artifact_version_files (blake3, version_id)
SELECT f.blake3, v.id
FROM artifact_versions v JOIN artifact_files f ON f.artifact_id = v.artifact_id
WHERE f.mode != 'symlink';
