// Package auth owns who a person is: their teams and roles (the roles and
// who may do what are the domain's, in workflow/task), password hashing and
// the random secrets behind sessions, API tokens and login links. It holds
// no state; store persists what it produces (hashes only).
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"flightdeck/workflow/task"
)

// Role is a team membership role, defined with its order and names in
// the domain (task.Role); the names below are the same values, so that
// code holding a User needs no second import.
type Role = task.Role

const (
	RoleViewer   = task.RoleViewer
	RoleDeployer = task.RoleDeployer
	RoleApprover = task.RoleApprover
	RoleAdmin    = task.RoleAdmin
)

var teamName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidTeamName: lowercase letters, digits and dashes, as the teams table
// requires.
func ValidTeamName(s string) bool { return teamName.MatchString(s) }

// MinPasswordLen is the shortest password accepted.
const MinPasswordLen = 8

// HashPassword hashes a password with bcrypt.
func HashPassword(password string) (string, error) {
	if len(password) < MinPasswordLen {
		return "", fmt.Errorf("password must be at least %d characters", MinPasswordLen)
	}
	if len(password) > 72 {
		// bcrypt ignores bytes past 72; refuse rather than silently truncate.
		return "", errors.New("password must be at most 72 bytes")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("error hashing password: %w", err)
	}
	return string(h), nil
}

// CheckPassword reports whether password matches hash. An empty hash (a user
// without a password) never matches.
func CheckPassword(hash, password string) bool {
	if hash == "" {
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// DummyCheck burns the time of one password check so that a login for an
// unknown email takes as long as one with a wrong password.
func DummyCheck(password string) {
	_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
}

var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("flightdeck-dummy-password"), bcrypt.DefaultCost)

// TokenPrefix starts every API token so leaked tokens are recognisable.
const TokenPrefix = "fd_"

// NewSecret returns a random URL-safe secret with the given prefix and its
// sha256 hash (what gets stored).
func NewSecret(prefix string) (secret string, hash []byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux (Go ≥1.24 panics instead)
	secret = prefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, HashSecret(secret)
}

// HashSecret hashes a presented secret for lookup.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// NewPassword returns a random readable password (dev seeding).
func NewPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return strings.TrimRight(base64.RawURLEncoding.EncodeToString(b), "-_")
}

// NormalizeEmail lower-cases and trims an email; it does not validate it.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// ValidEmail is a deliberately loose check: one @, something on each side,
// no spaces, a dot in the domain or a .local/.test style host.
func ValidEmail(s string) bool {
	at := strings.IndexByte(s, '@')
	if at <= 0 || at != strings.LastIndexByte(s, '@') || at == len(s)-1 || len(s) > 254 {
		return false
	}
	return !strings.ContainsAny(s, " \t\r\n<>\"") && strings.Contains(s[at+1:], ".")
}

// CSRFToken is the anti-forgery token of a session: derived from the
// session's secret, which only the server and the browser's HttpOnly cookie
// know, so a token cannot be planted or carried to another session, and
// every login (a new session) gets a new one.
func CSRFToken(sessionSecret string) string {
	m := hmac.New(sha256.New, []byte(sessionSecret))
	m.Write([]byte("flightdeck csrf token"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// WellFormedSecret reports whether s looks like a secret from NewSecret
// without a prefix: 32 random bytes, base64url.
func WellFormedSecret(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == 32
}
