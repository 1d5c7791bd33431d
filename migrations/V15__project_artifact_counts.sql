-- How many artifacts each project's record holds, kept in step by every refresh
-- that inserts or deletes one, so a listing's total reads one number instead of
-- counting every artifact of the project.
ALTER TABLE projects ADD COLUMN artifact_count INTEGER NOT NULL DEFAULT 0;
UPDATE projects SET artifact_count = (SELECT COUNT(*) FROM project_artifacts p WHERE p.project_id = projects.id);
