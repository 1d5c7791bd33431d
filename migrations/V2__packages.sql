-- Packages made from artifacts, and which artifacts each one took. Candidates
-- (artifacts not yet in any package) are an anti-join against package_artifacts.

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
);
CREATE INDEX package_artifacts_artifact ON package_artifacts (artifact_id) WHERE artifact_id IS NOT NULL;
CREATE INDEX package_artifacts_project ON package_artifacts (project_root, kind, path) WHERE project_root IS NOT NULL;

-- Packages installed into projects (written by `aam install`); search marks
-- artifacts held by a package installed in the current project.
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
