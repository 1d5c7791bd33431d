-- Table statistics for the query planner. Without them SQLite plans a lookup by
-- (source_id, path) on the (source_id, kind, path) index and walks every artifact
-- of the source. Catalogs written before this version are analyzed once here;
-- from now on every bulk write refreshes them (`Catalog::refresh_statistics`).
-- A bounded analysis (2000 rows per index) is enough to tell the indexes apart.

PRAGMA analysis_limit = 2000;
ANALYZE;

-- Each source's live skills counted by what keeps them out of Skills over MCP
-- (`{"served": n, "name_invalid": n, ...}`), kept in step by the writes that
-- change its skills so `catalog stats` reads numbers, not every skill. NULL: not
-- counted yet (catalogs from before this version are counted after migrating).
ALTER TABLE sources ADD COLUMN skill_census TEXT;
