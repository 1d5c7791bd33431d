-- A package's member whose artifact went with its source (`source remove`) keeps
-- its kind and path but no artifact. Adding a source of the same repository links
-- such members again; this index holds only them, so that lookup reads nothing
-- when there are none.
CREATE INDEX package_artifacts_unlinked ON package_artifacts (kind, path)
    WHERE artifact_id IS NULL AND project_root IS NULL;

-- Members left unlinked by a source removed and added again before this version.
UPDATE package_artifacts AS pa SET artifact_id = a.id
FROM packages p, sources s, artifacts a
WHERE pa.artifact_id IS NULL AND pa.project_root IS NULL
  AND p.id = pa.package_id AND p.origin = 'source'
  AND s.url = json_extract(p.manifest_json, '$.provenance.source_url')
  AND a.source_id = s.id AND a.kind = pa.kind AND a.path = pa.path AND a.removed_commit_id IS NULL;

-- Their sources' counts of packaged artifacts, counted again.
UPDATE sources SET
    packaged_skill_count = (SELECT COUNT(*) FROM artifacts a WHERE a.source_id = sources.id AND a.kind = 'skill'
        AND a.removed_commit_id IS NULL AND EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id)),
    packaged_agent_count = (SELECT COUNT(*) FROM artifacts a WHERE a.source_id = sources.id AND a.kind = 'agent'
        AND a.removed_commit_id IS NULL AND EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id)),
    packaged_prompt_count = (SELECT COUNT(*) FROM artifacts a WHERE a.source_id = sources.id AND a.kind = 'prompt'
        AND a.removed_commit_id IS NULL AND EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id)),
    packaged_instruction_count = (SELECT COUNT(*) FROM artifacts a WHERE a.source_id = sources.id AND a.kind = 'instruction'
        AND a.removed_commit_id IS NULL AND EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id))
WHERE EXISTS (SELECT 1 FROM package_artifacts pa JOIN artifacts a ON a.id = pa.artifact_id WHERE a.source_id = sources.id);
