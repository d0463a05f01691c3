package store

import (
	"context"
	"time"

	"flightdeck/internal/auth"
)

// SessionCreate stores a browser session by the hash of its cookie value.
func (s *Store) SessionCreate(ctx context.Context, idHash []byte, userID string, ttl time.Duration) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO sessions (id_hash, user_id, expires_at)
		VALUES ($1, $2, now() + make_interval(secs => $3))`, idHash, userID, ttl.Seconds())
	return interpretError(err)
}

// SessionUser returns the user of a live session. Expiry is judged by the
// database clock.
func (s *Store) SessionUser(ctx context.Context, idHash []byte) (*auth.User, error) {
	var userID string
	err := s.pool.QueryRow(ctx, `SELECT user_id FROM sessions WHERE id_hash = $1 AND expires_at > now()`, idHash).Scan(&userID)
	if err != nil {
		return nil, interpretError(err)
	}
	return s.UserGet(ctx, userID)
}

// SessionDelete ends a session (logout). Deleting an unknown one is no error.
func (s *Store) SessionDelete(ctx context.Context, idHash []byte) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE id_hash = $1`, idHash)
	return interpretError(err)
}

// SessionDeleteExpired removes expired sessions and login links.
func (s *Store) SessionDeleteExpired(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE expires_at < now()`)
	if err != nil {
		return 0, interpretError(err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM login_links WHERE expires_at < now()`); err != nil {
		return 0, interpretError(err)
	}
	return tag.RowsAffected(), nil
}

// LoginLinkCreate stores a one-time login link for a user.
func (s *Store) LoginLinkCreate(ctx context.Context, hash []byte, userID string, ttl time.Duration) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO login_links (hash, user_id, expires_at)
		VALUES ($1, $2, now() + make_interval(secs => $3))`, hash, userID, ttl.Seconds())
	return interpretError(err)
}

// LoginLinkUse consumes a login link once and returns its user id.
func (s *Store) LoginLinkUse(ctx context.Context, hash []byte) (string, error) {
	var userID string
	err := s.pool.QueryRow(ctx, `
		UPDATE login_links SET used_at = now()
		WHERE hash = $1 AND used_at IS NULL AND expires_at > now()
		RETURNING user_id`, hash).Scan(&userID)
	return userID, interpretError(err)
}

// SessionsLive returns which of the given session hashes (as strings) still
// belong to live sessions: not logged out, not expired by the database
// clock. Open sockets ask it periodically, all at once.
func (s *Store) SessionsLive(ctx context.Context, idHashes [][]byte) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT id_hash FROM sessions WHERE id_hash = ANY($1) AND expires_at > now()`, idHashes)
	if err != nil {
		return nil, interpretError(err)
	}
	return collectHashes(rows)
}
