-- A project call that finds only edited files re-reads the artifacts whose main
-- file they are: looked up by main file, not by scanning the project's artifacts.
CREATE INDEX project_artifacts_main_file ON project_artifacts (project_id, main_file);
