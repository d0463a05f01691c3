package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// LocalCAGet returns the local CA's certificate and key (PEM), or
// ErrNotFound before the first certificate was issued.
func (s *Store) LocalCAGet(ctx context.Context) (certPEM, keyPEM string, err error) {
	err = s.pool.QueryRow(ctx, `SELECT cert_pem, key_pem FROM local_ca WHERE id = 1`).Scan(&certPEM, &keyPEM)
	return certPEM, keyPEM, interpretError(err)
}

// LocalCAInsert stores a new CA unless one exists; callers then read the
// winner with LocalCAGet, so processes racing to create it agree on one.
func (s *Store) LocalCAInsert(ctx context.Context, certPEM, keyPEM string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO local_ca (id, cert_pem, key_pem) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING`, certPEM, keyPEM)
	return interpretError(err)
}

// LocalCert is a certificate issued by the local CA; also cert_issue's output
// (without the PEM blocks, which go to the artifact).
type LocalCert struct {
	Serial   string    `json:"serial"`
	Host     string    `json:"host"`
	NotAfter time.Time `json:"not_after"`
	CertPEM  string    `json:"-"`
	KeyPEM   string    `json:"-"`
}

// LocalCertInsert stores an issued certificate and records the effect.
func (s *Store) LocalCertInsert(ctx context.Context, team string, c LocalCert, eff LocalEffect) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		teamID, err := localTeamID(ctx, tx, team)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO local_certificates (serial, team_id, host, cert_pem, key_pem, not_after, idempotency_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, c.Serial, teamID, c.Host, c.CertPEM, c.KeyPEM, c.NotAfter, eff.Key)
		if err != nil {
			return interpretError(err)
		}
		return localEffectRecord(ctx, tx, eff, c)
	})
}

// LocalRevocation is what cert_revoke did; also its output.
type LocalRevocation struct {
	Serial  string `json:"serial"`
	Host    string `json:"host"`
	Revoked bool   `json:"revoked"` // false: it was revoked already
}

// LocalCertRevoke revokes team's certificate serial, or with serial "" the
// newest unrevoked one for host, and records the effect. Nothing to revoke
// is ErrNotFound.
func (s *Store) LocalCertRevoke(ctx context.Context, team, serial, host string, eff LocalEffect) (LocalRevocation, error) {
	var rv LocalRevocation
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		teamID, err := localTeamID(ctx, tx, team)
		if err != nil {
			return err
		}
		var revokedAt *time.Time
		if serial != "" {
			err = tx.QueryRow(ctx, `SELECT serial, host, revoked_at FROM local_certificates WHERE serial = $1 AND team_id = $2 FOR UPDATE`,
				serial, teamID).Scan(&rv.Serial, &rv.Host, &revokedAt)
		} else {
			err = tx.QueryRow(ctx, `SELECT serial, host, revoked_at FROM local_certificates
				WHERE host = $1 AND team_id = $2 AND revoked_at IS NULL ORDER BY created_at DESC LIMIT 1 FOR UPDATE`,
				host, teamID).Scan(&rv.Serial, &rv.Host, &revokedAt)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no certificate to revoke", ErrNotFound)
		}
		if err != nil {
			return interpretError(err)
		}
		if revokedAt == nil {
			if _, err := tx.Exec(ctx, `UPDATE local_certificates SET revoked_at = now() WHERE serial = $1`, rv.Serial); err != nil {
				return interpretError(err)
			}
			rv.Revoked = true
		}
		return localEffectRecord(ctx, tx, eff, rv)
	})
	return rv, err
}

// LocalCertGet returns a certificate by serial.
func (s *Store) LocalCertGet(ctx context.Context, serial string) (*LocalCert, *time.Time, error) {
	var c LocalCert
	var revokedAt *time.Time
	err := s.pool.QueryRow(ctx, `SELECT serial, host, not_after, cert_pem, key_pem, revoked_at FROM local_certificates WHERE serial = $1`, serial).
		Scan(&c.Serial, &c.Host, &c.NotAfter, &c.CertPEM, &c.KeyPEM, &revokedAt)
	if err != nil {
		return nil, nil, interpretError(err)
	}
	return &c, revokedAt, nil
}

// LocalRevoked is an entry of the CA's revocation list.
type LocalRevoked struct {
	Serial    string
	RevokedAt time.Time
}

// LocalCertRevokedList lists revoked certificates that have not expired.
func (s *Store) LocalCertRevokedList(ctx context.Context) ([]LocalRevoked, error) {
	rows, err := s.pool.Query(ctx, `SELECT serial, revoked_at FROM local_certificates
		WHERE revoked_at IS NOT NULL AND not_after > now() ORDER BY revoked_at, serial`)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []LocalRevoked
	for rows.Next() {
		var r LocalRevoked
		if err := rows.Scan(&r.Serial, &r.RevokedAt); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, r)
	}
	return out, interpretError(rows.Err())
}

// LocalCertCurrent returns the newest valid (unrevoked, unexpired)
// certificate for the DNS name host, or ErrNotFound.
func (s *Store) LocalCertCurrent(ctx context.Context, host string) (*LocalCert, error) {
	var c LocalCert
	err := s.pool.QueryRow(ctx, `SELECT serial, host, not_after, cert_pem, key_pem FROM local_certificates
		WHERE host = $1 AND revoked_at IS NULL AND not_after > now() ORDER BY created_at DESC LIMIT 1`, host).
		Scan(&c.Serial, &c.Host, &c.NotAfter, &c.CertPEM, &c.KeyPEM)
	if err != nil {
		return nil, interpretError(err)
	}
	return &c, nil
}
