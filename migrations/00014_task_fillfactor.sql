-- +goose Up
-- Room on each page of tasks for every row's next version. Finishing a
-- task changes indexed columns (state, finished_at), so its new version is
-- never a HOT update, but it still goes on the same page when that page has
-- room; otherwise PostgreSQL first locks the old version (an extra WAL
-- record), releases the page, and puts the new version on another one (a
-- second page dirtied, and after a checkpoint a second full-page image).
-- Tasks made together are claimed together (ids in time order, 00013), so a
-- page's rows are all updated within a second or two, too close together
-- for pruning to free their old versions in between. At 70% a page held
-- about 27 rows (180 bytes each) and room for 11 new versions: in a
-- burn-down 3 of 5 finishes went to another page. At 45% it holds about 17
-- rows and room for all of their next versions. The setting applies to
-- pages filled from now on.
ALTER TABLE tasks SET (fillfactor = 45);

-- +goose Down
ALTER TABLE tasks SET (fillfactor = 70);
