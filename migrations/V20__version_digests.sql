-- A version keeps the distinct blake3 digests of its files itself (a JSON array,
-- sorted), so reading them no longer needs an index of artifact_version_files by
-- version: that index took every digest of a new source in random order (a
-- quarter of a second at the end of a 100,000-artifact add). Without it the
-- table can no longer follow its versions by foreign key (each deleted version
-- would read the whole table): aam deletes a version's digest rows itself, from
-- the digests the version keeps, when it deletes the version.
ALTER TABLE artifact_versions ADD COLUMN digests TEXT NOT NULL DEFAULT '[]';

UPDATE artifact_versions SET digests = (
    SELECT json_group_array(f.blake3 ORDER BY f.blake3)
    FROM artifact_version_files f
    WHERE f.version_id = artifact_versions.id
);

CREATE TABLE artifact_version_files_new (
    blake3      TEXT    NOT NULL,
    version_id  INTEGER NOT NULL,                 -- artifact_versions.id
    PRIMARY KEY (blake3, version_id)
) WITHOUT ROWID;

INSERT INTO artifact_version_files_new (blake3, version_id)
SELECT blake3, version_id FROM artifact_version_files;

DROP TABLE artifact_version_files;

ALTER TABLE artifact_version_files_new RENAME TO artifact_version_files;
