package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/auth"
)

// TokenActor is who the audit log names for token changes made with the
// command line (an operator on the server, not a signed-in person).
const TokenActor = "cli"

// TokenCreate stores an API token's hash for the user with that email,
// and a token.created entry in the audit log of each of the user's teams,
// in one statement.
func (s *Store) TokenCreate(ctx context.Context, email, name string, hash []byte) error {
	var n int
	err := s.pool.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO api_tokens (user_id, name, hash)
			SELECT id, $2, $3 FROM users WHERE email = $1
			RETURNING user_id
		), audit AS (
			INSERT INTO audit_log (team_id, actor, action, target, data)
			SELECT m.team_id, $4, 'token.created', '', jsonb_build_object('email', $1::text, 'name', $2::text)
			FROM ins JOIN memberships m ON m.user_id = ins.user_id
		)
		SELECT count(*) FROM ins`, email, name, hash, TokenActor).Scan(&n)
	if err != nil {
		return interpretError(err)
	}
	if n == 0 {
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
	var n int64
	err := s.pool.QueryRow(ctx, `
		WITH upd AS (
			UPDATE api_tokens SET revoked_at = now()
			WHERE user_id = $1 AND revoked_at IS NULL AND ($2 = '' OR name = $2)
			RETURNING name
		), audit AS (
			INSERT INTO audit_log (team_id, actor, action, target, data)
			SELECT m.team_id, $3, 'token.revoked', '', jsonb_build_object('email', $4::text, 'name', $2::text,
				'revoked', (SELECT count(*) FROM upd))
			FROM memberships m WHERE m.user_id = $1 AND EXISTS (SELECT 1 FROM upd)
		)
		SELECT count(*) FROM upd`, userID, name, TokenActor, email).Scan(&n)
	if err != nil {
		return 0, interpretError(err)
	}
	return n, nil
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

// TokensLive returns which of the given token hashes (as strings) still
// belong to tokens that are not revoked. Open sockets ask it periodically,
// all at once.
func (s *Store) TokensLive(ctx context.Context, hashes [][]byte) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT hash FROM api_tokens WHERE hash = ANY($1) AND revoked_at IS NULL`, hashes)
	if err != nil {
		return nil, interpretError(err)
	}
	return collectHashes(rows)
}

func collectHashes(rows pgx.Rows) (map[string]bool, error) {
	live := map[string]bool{}
	hashes, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, interpretError(err)
	}
	for _, h := range hashes {
		live[string(h)] = true
	}
	return live, nil
}
