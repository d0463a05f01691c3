package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ArtifactMeta describes a stored artifact: an artifacts row, scanned by
// column name (SELECT *: a new column is a field here).
type ArtifactMeta struct {
	ID          string    `json:"id" db:"id"`
	TaskID      string    `json:"task_id" db:"task_id"`
	TeamID      string    `json:"-" db:"team_id"`
	StepIdx     int       `json:"step_index" db:"step_idx"`
	Name        string    `json:"name" db:"name"`
	ContentType string    `json:"content_type" db:"content_type"`
	Bytes       int64     `json:"bytes" db:"bytes"`
	SHA256      string    `json:"sha256" db:"sha256"`
	Summary     string    `json:"summary" db:"summary"`
	Excerpt     string    `json:"excerpt" db:"excerpt"`
	Truncated   bool      `json:"truncated" db:"truncated"`
	Complete    bool      `json:"-" db:"complete"`
	CreatedAt   time.Time `json:"created_at" db:"created_at"`
}

// ArtifactCreate starts an artifact; chunks follow, then ArtifactFinish.
func (s *Store) ArtifactCreate(ctx context.Context, taskID, teamID string, stepIdx int, name, contentType string) (string, error) {
	var id string
	err := s.pool.QueryRow(ctx, `
		INSERT INTO artifacts (task_id, team_id, step_idx, name, content_type) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
		taskID, teamID, stepIdx, name, contentType).Scan(&id)
	return id, interpretError(err)
}

// ArtifactChunkAppend stores one chunk.
func (s *Store) ArtifactChunkAppend(ctx context.Context, id string, seq int, data []byte) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO artifact_chunks (artifact_id, seq, data) VALUES ($1, $2, $3)`, id, seq, data)
	return interpretError(err)
}

// ArtifactFinish records size, hash, summary and excerpt.
func (s *Store) ArtifactFinish(ctx context.Context, m ArtifactMeta) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE artifacts SET bytes = $2, sha256 = $3, summary = $4, excerpt = $5, truncated = $6, complete = true WHERE id = $1`,
		m.ID, m.Bytes, m.SHA256, m.Summary, m.Excerpt, m.Truncated)
	return interpretError(err)
}

// ArtifactGet returns a complete artifact of one of teamIDs.
func (s *Store) ArtifactGet(ctx context.Context, teamIDs []string, id string) (*ArtifactMeta, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	m, err := oneByName[ArtifactMeta](s.pool.Query(ctx, `SELECT * FROM artifacts WHERE id = $1 AND team_id = ANY($2) AND complete`, id, teamIDs))
	if err != nil {
		return nil, err
	}
	m.CreatedAt = m.CreatedAt.UTC()
	return m, nil
}

// ArtifactList returns a visible task's complete artifacts.
func (s *Store) ArtifactList(ctx context.Context, teamIDs []string, taskID string) ([]ArtifactMeta, error) {
	rows, err := s.pool.Query(ctx, `SELECT * FROM artifacts
		WHERE task_id = $1 AND team_id = ANY($2) AND complete ORDER BY created_at`, taskID, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[ArtifactMeta])
	if err != nil {
		return nil, interpretError(err)
	}
	if out == nil {
		out = []ArtifactMeta{}
	}
	return out, nil
}

// ArtifactChunks calls fn with each chunk in order, one at a time, so a
// large artifact is streamed, never held whole.
func (s *Store) ArtifactChunks(ctx context.Context, id string, fn func([]byte) error) error {
	for seq := 0; ; seq++ {
		var data []byte
		err := s.pool.QueryRow(ctx, `SELECT data FROM artifact_chunks WHERE artifact_id = $1 AND seq = $2`, id, seq).Scan(&data)
		if err != nil {
			if err := interpretError(err); err == ErrNotFound {
				return nil
			}
			return interpretError(err)
		}
		if err := fn(data); err != nil {
			return err
		}
	}
}
