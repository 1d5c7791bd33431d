-- What the content audit (docs/audit.md) found in each artifact's files: one row per
-- finding, written with the artifact's files and carried over for unchanged blobs.
CREATE TABLE artifact_findings (
    artifact_id  INTEGER NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    path         TEXT    NOT NULL,                 -- repository path of the file
    rule         TEXT    NOT NULL,                 -- rule id, e.g. `hidden-bidi`
    severity     TEXT    NOT NULL CHECK (severity IN ('info', 'warn', 'high')),
    line         INTEGER,                          -- 1-based; NULL for whole-file findings
    excerpt      TEXT    NOT NULL                  -- invisible characters shown as <U+XXXX>
);
CREATE INDEX artifact_findings_artifact ON artifact_findings (artifact_id, path);
CREATE INDEX artifact_findings_rule ON artifact_findings (rule);
