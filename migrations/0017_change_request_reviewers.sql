-- Requested reviewers of a change request (docs/CHANGE-REQUESTS.md §3): the user ids asked to review it, in the order
-- given, each once, at most 20. A JSON array on the request rather than a table of its own: the list is set and
-- replaced whole, read with the request, and copied with it by a bucket move (as environment_protections keeps its
-- role lists). An expand: the code before it runs unchanged on it.
ALTER TABLE change_requests ADD COLUMN reviewers TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(reviewers));
