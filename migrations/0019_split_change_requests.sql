-- Splits through change requests (docs/SPLITS.md §1): a request of kind `split` or `promote` keeps its proposal here,
-- {kind, weight, steps, promote_at_end, running}, `running` the split it was made on (its id and count of changes,
-- null: none) for the apply's conflict check. Its `kind` column stays 'deploy' (the candidate in
-- variant_revision_id): an expand, the table kept.
ALTER TABLE change_requests ADD COLUMN split TEXT CHECK (split IS NULL OR json_valid(split));
