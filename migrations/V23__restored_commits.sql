-- Commits a lock restore took from the git cache (`refs/aam/locked/<commit>`
-- keeps one a restore fetched), with the root of each project whose lock file
-- named it. `aam catalog check` counts a restored commit no recorded lock file
-- names any more as unused, and `--repair` deletes its ref, then the cache once
-- nothing else keeps it.
CREATE TABLE restored_commits (
    cache_key     TEXT    NOT NULL,   -- cache/git/<cache_key>
    commit_id     TEXT    NOT NULL,   -- 40 hex digits
    project_root  TEXT    NOT NULL,   -- where `.aam/aam-lock.yaml` named it
    used_at       TEXT    NOT NULL,   -- RFC 3339: the last restore that took it
    PRIMARY KEY (cache_key, commit_id, project_root)
) WITHOUT ROWID;
