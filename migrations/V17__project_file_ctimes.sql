-- A file's inode change time beside its mtime, as git records both: an edit
-- that keeps the size and puts the mtime back (`cp -p`, `touch -r`) still moves
-- the ctime. -1: unknown (rows recorded before this column), so the next check
-- reads the file once and records it.
ALTER TABLE project_files ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT -1;
