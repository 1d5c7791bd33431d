-- A member of a package taken from a source whose artifact is not in the catalog
-- (its source removed, or the install restored from a lock file before the
-- source was added here) keeps the URL of its repository. Adding a source of that
-- repository links the member to its artifact again, by kind and path, and clears
-- the URL; this index holds only such members, so that lookup reads nothing when
-- there are none. Packages made from a folder or an archive never get one: what
-- their manifest claims is no proof of where their files came from.
ALTER TABLE package_artifacts ADD COLUMN source_url TEXT;
CREATE INDEX package_artifacts_awaiting_source ON package_artifacts (source_url, kind, path)
    WHERE source_url IS NOT NULL;
