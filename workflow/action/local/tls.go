package local

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"flightdeck/store"
)

// certTTL: how long a served certificate is reused before looking again, so
// a revocation or a new certificate takes effect within seconds.
const certTTL = 5 * time.Second

// CertSource serves the local CA's certificates over TLS, chosen by SNI:
// the newest valid certificate issued for that name.
type CertSource struct {
	st    *store.Store
	mu    sync.Mutex
	cache map[string]certEntry
}

type certEntry struct {
	cert    *tls.Certificate
	expires time.Time
}

// NewCertSource returns a CertSource over st.
func NewCertSource(st *store.Store) *CertSource {
	return &CertSource{st: st, cache: map[string]certEntry{}}
}

// TLSConfig is a server configuration that uses the source.
func (cs *CertSource) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cs.GetCertificate}
}

// GetCertificate implements tls.Config.GetCertificate.
func (cs *CertSource) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.TrimSuffix(strings.ToLower(hello.ServerName), ".")
	if !validHost(name) {
		return nil, errors.New("no server name (SNI) to choose a certificate by")
	}
	now := time.Now()
	cs.mu.Lock()
	e, ok := cs.cache[name]
	cs.mu.Unlock()
	if ok && now.Before(e.expires) {
		if e.cert == nil {
			return nil, fmt.Errorf("no valid certificate for %s", name)
		}
		return e.cert, nil
	}
	ctx := hello.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	var cert *tls.Certificate
	c, err := cs.st.LocalCertCurrent(ctx, name)
	switch {
	case err == nil:
		ca, err := LoadCA(ctx, cs.st)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair([]byte(c.CertPEM+ca.PEM), []byte(c.KeyPEM))
		if err != nil {
			return nil, fmt.Errorf("certificate %s: %w", c.Serial, err)
		}
		cert = &pair
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	cs.mu.Lock()
	if len(cs.cache) > 10000 {
		clear(cs.cache)
	}
	cs.cache[name] = certEntry{cert: cert, expires: now.Add(certTTL)}
	cs.mu.Unlock()
	if cert == nil {
		return nil, fmt.Errorf("no valid certificate for %s", name)
	}
	return cert, nil
}
