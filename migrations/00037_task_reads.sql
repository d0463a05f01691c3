-- +goose Up
-- task_reads is a task as every read shows it (store.TaskGet, TaskGetMany,
-- TaskList), named column by column: the store scans it by these names
-- (store.taskRow), so a new column is added here and to that struct, and no
-- query copies a column list by position. A view is inlined by the planner:
-- a filter on its id or team_id uses the tasks indexes as before.
CREATE VIEW task_reads AS
SELECT t.id, t.team_id, tm.name AS team, t.kind, t.pipeline, t.params, t.prompt, t.priority, t.state,
	t.attempt, t.max_attempts, t.created_by, u.email AS created_by_email, t.created_at, t.started_at,
	t.finished_at, t.deadline_at, t.cancel_requested_at IS NOT NULL AS cancel_requested, t.error, t.result,
	t.last_seq, t.progress_step, t.progress_total,
	-- the task holding a pending task's concurrency key (its wait holds no worker)
	(SELECT h.task_id FROM concurrency_holds h
		WHERE t.state = 'pending' AND h.team_id = t.team_id AND h.key = t.concurrency_key AND h.task_id <> t.id) AS blocked_by,
	t.rerun_of,
	-- a request lasts while the task runs or waits to run again
	t.pause_requested_at IS NOT NULL AND t.state IN ('running', 'pending') AS pause_requested,
	t.failed_step, t.decision_expires_at, t.environment,
	CASE WHEN t.state = 'scheduled' THEN t.run_after END AS run_at,
	t.promoted_from, t.override
FROM tasks t JOIN teams tm ON tm.id = t.team_id JOIN users u ON u.id = t.created_by;

-- +goose Down
DROP VIEW task_reads;
