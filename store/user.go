package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"flightdeck/internal/auth"
)

// UserAddParams are the inputs of UserAdd.
type UserAddParams struct {
	Email        string
	Team         string
	Role         auth.Role
	PasswordHash string // "" keeps an existing password (or none for a new user)
}

// UserAdd creates the user (and the team if new) and sets the user's role in
// the team. Adding an existing user to a team updates the role; it is
// idempotent so seeding can run at every start.
func (s *Store) UserAdd(ctx context.Context, p UserAddParams) (string, error) {
	var userID string
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var teamID string
		if err := tx.QueryRow(ctx, `
			INSERT INTO teams (name) VALUES ($1)
			ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
			RETURNING id`, p.Team).Scan(&teamID); err != nil {
			return fmt.Errorf("error upserting team: %w", interpretError(err))
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO users (email, password_hash) VALUES ($1, NULLIF($2, ''))
			ON CONFLICT (email) DO UPDATE SET password_hash = COALESCE(NULLIF($2, ''), users.password_hash)
			RETURNING id`, p.Email, p.PasswordHash).Scan(&userID); err != nil {
			return fmt.Errorf("error upserting user: %w", interpretError(err))
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO memberships (user_id, team_id, role) VALUES ($1, $2, $3)
			ON CONFLICT (user_id, team_id) DO UPDATE SET role = EXCLUDED.role`,
			userID, teamID, string(p.Role)); err != nil {
			return fmt.Errorf("error upserting membership: %w", interpretError(err))
		}
		return nil
	})
	return userID, err
}

// UserGetByEmail loads a user with memberships and password hash.
func (s *Store) UserGetByEmail(ctx context.Context, email string) (*auth.User, string, error) {
	var id, hash string
	err := s.pool.QueryRow(ctx, `SELECT id, COALESCE(password_hash, '') FROM users WHERE email = $1`, email).Scan(&id, &hash)
	if err != nil {
		return nil, "", interpretError(err)
	}
	u, err := s.UserGet(ctx, id)
	return u, hash, err
}

// UserGet loads a user with memberships.
func (s *Store) UserGet(ctx context.Context, id string) (*auth.User, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT u.id, u.email, t.id, t.name, m.role
		FROM users u
		LEFT JOIN memberships m ON m.user_id = u.id
		LEFT JOIN teams t ON t.id = m.team_id
		WHERE u.id = $1
		ORDER BY t.name`, id)
	if err != nil {
		return nil, interpretError(err)
	}
	return scanUser(rows)
}

// scanUser folds (user, membership) rows into one user.
func scanUser(rows pgx.Rows) (*auth.User, error) {
	defer rows.Close()
	var u *auth.User
	for rows.Next() {
		var id, email string
		var teamID, team, role *string
		if err := rows.Scan(&id, &email, &teamID, &team, &role); err != nil {
			return nil, interpretError(err)
		}
		if u == nil {
			u = &auth.User{ID: id, Email: email}
		}
		if teamID != nil {
			u.Memberships = append(u.Memberships, auth.Membership{TeamID: *teamID, Team: *team, Role: auth.Role(*role)})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	if u == nil {
		return nil, ErrNotFound
	}
	return u, nil
}

// TeamIDByName resolves a team's id.
func (s *Store) TeamIDByName(ctx context.Context, name string) (string, error) {
	var id string
	err := s.pool.QueryRow(ctx, `SELECT id FROM teams WHERE name = $1`, name).Scan(&id)
	return id, interpretError(err)
}

// UserAutoJoin creates a person who signed in with single sign-on but had
// no account: the user (no password), the team when new, the membership
// and its audit entry, in one statement. An email that has an account by
// now (a concurrent first sign-in, or an admin's add) is ErrConflict: the
// account stays as it is.
func (s *Store) UserAutoJoin(ctx context.Context, email, team string, role auth.Role) (string, error) {
	var userID string
	err := s.pool.QueryRow(ctx, `
		WITH t AS (
			INSERT INTO teams (name) VALUES ($2)
			ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
			RETURNING id
		), u AS (
			INSERT INTO users (email) VALUES ($1)
			ON CONFLICT (email) DO NOTHING
			RETURNING id
		), m AS (
			INSERT INTO memberships (user_id, team_id, role)
			SELECT u.id, t.id, $3 FROM u, t
		), a AS (
			INSERT INTO audit_log (team_id, actor, action, target, data)
			SELECT t.id, $1, 'user.auto_joined', $1, jsonb_build_object('role', $3::text, 'via', 'oidc')
			FROM u, t
		)
		SELECT id FROM u`, email, team, string(role)).Scan(&userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrConflict
	}
	return userID, interpretError(err)
}

// TeamDeciders counts the members of a team who could decide an approval
// with these roles, the creator left out (task.MayDecide's four eyes): a
// submit whose reviewers can never be found is refused (contract §9).
func (s *Store) TeamDeciders(ctx context.Context, teamID string, roles []string, creatorID string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FROM memberships WHERE team_id = $1 AND role = ANY($2) AND user_id::text <> $3`,
		teamID, roles, creatorID).Scan(&n)
	return n, interpretError(err)
}
