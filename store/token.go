package store

import (
	"context"

	"flightdeck/internal/auth"
)

// TokenCreate stores an API token's hash for the user with that email.
func (s *Store) TokenCreate(ctx context.Context, email, name string, hash []byte) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO api_tokens (user_id, name, hash)
		SELECT id, $2, $3 FROM users WHERE email = $1`, email, name, hash)
	if err != nil {
		return interpretError(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// TokenRevoke revokes the user's tokens: all of them, or those named name.
// It returns how many were revoked; an unknown user is ErrNotFound.
func (s *Store) TokenRevoke(ctx context.Context, email, name string) (int64, error) {
	var userID string
	if err := s.pool.QueryRow(ctx, `SELECT id FROM users WHERE email = $1`, email).Scan(&userID); err != nil {
		return 0, interpretError(err)
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE api_tokens SET revoked_at = now()
		WHERE user_id = $1 AND revoked_at IS NULL AND ($2 = '' OR name = $2)`, userID, name)
	if err != nil {
		return 0, interpretError(err)
	}
	return tag.RowsAffected(), nil
}

// TokenUser returns the user of a live (not revoked) token. Revocation takes
// effect at once because every request looks the token up.
func (s *Store) TokenUser(ctx context.Context, hash []byte) (*auth.User, error) {
	var userID string
	err := s.pool.QueryRow(ctx, `
		SELECT user_id FROM api_tokens WHERE hash = $1 AND revoked_at IS NULL`, hash).Scan(&userID)
	if err != nil {
		return nil, interpretError(err)
	}
	return s.UserGet(ctx, userID)
}
