-- Live artifacts that some package holds, per source and kind, kept in step by
-- package writes and by updates that remove or revive packaged artifacts, so the
-- number of packaging candidates is a sum over sources, never a scan.
ALTER TABLE sources ADD COLUMN packaged_skill_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sources ADD COLUMN packaged_agent_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sources ADD COLUMN packaged_prompt_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sources ADD COLUMN packaged_instruction_count INTEGER NOT NULL DEFAULT 0;

-- Counts for catalogs that already hold packages.
UPDATE sources SET
    packaged_skill_count = (SELECT COUNT(*) FROM artifacts a WHERE a.source_id = sources.id AND a.kind = 'skill'
        AND a.removed_commit_id IS NULL AND EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id)),
    packaged_agent_count = (SELECT COUNT(*) FROM artifacts a WHERE a.source_id = sources.id AND a.kind = 'agent'
        AND a.removed_commit_id IS NULL AND EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id)),
    packaged_prompt_count = (SELECT COUNT(*) FROM artifacts a WHERE a.source_id = sources.id AND a.kind = 'prompt'
        AND a.removed_commit_id IS NULL AND EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id)),
    packaged_instruction_count = (SELECT COUNT(*) FROM artifacts a WHERE a.source_id = sources.id AND a.kind = 'instruction'
        AND a.removed_commit_id IS NULL AND EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id));
