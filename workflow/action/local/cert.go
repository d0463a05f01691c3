package local

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	"flightdeck/internal/words"
	"flightdeck/store"
	"flightdeck/workflow/action"
)

// CA is the local certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	PEM  string
}

// LoadCA returns the CA stored in Postgres, creating it the first time.
// Processes racing to create it both insert-if-absent and then read the
// one that won, so every process signs with the same key.
func LoadCA(ctx context.Context, st *store.Store) (*CA, error) {
	certPEM, keyPEM, err := st.LocalCAGet(ctx)
	if errors.Is(err, store.ErrNotFound) {
		c, k, gerr := newCA()
		if gerr != nil {
			return nil, gerr
		}
		if err := st.LocalCAInsert(ctx, c, k); err != nil {
			return nil, fmt.Errorf("error storing the local CA: %w", err)
		}
		certPEM, keyPEM, err = st.LocalCAGet(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("error loading the local CA: %w", err)
	}
	cb, _ := pem.Decode([]byte(certPEM))
	kb, _ := pem.Decode([]byte(keyPEM))
	if cb == nil || kb == nil {
		return nil, errors.New("the stored local CA is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("local CA certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("local CA key: %w", err)
	}
	return &CA{Cert: cert, Key: key, PEM: certPEM}, nil
}

func newCA() (certPEM, keyPEM string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, _ := newSerial()
	now := time.Now()
	tpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "flightdeck local CA", Organization: []string{"flightdeck"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return "", "", fmt.Errorf("error creating the local CA: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})), nil
}

// newSerial is a random positive 128-bit serial (RFC 5280 allows 20 octets).
func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// issue signs a server certificate for dnsName.
func (ca *CA) issue(dnsName string, validity time.Duration) (store.LocalCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return store.LocalCert{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return store.LocalCert{}, err
	}
	now := time.Now()
	tpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: dnsName},
		DNSNames:     []string{dnsName},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return store.LocalCert{}, fmt.Errorf("error signing the certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return store.LocalCert{}, err
	}
	return store.LocalCert{
		Serial: hex.EncodeToString(serial.Bytes()), Host: dnsName, NotAfter: tpl.NotAfter.UTC().Truncate(time.Second),
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})),
	}, nil
}

// CRL returns the CA's current revocation list (DER).
func CRL(ctx context.Context, st *store.Store) ([]byte, error) {
	ca, err := LoadCA(ctx, st)
	if err != nil {
		return nil, err
	}
	revoked, err := st.LocalCertRevokedList(ctx)
	if err != nil {
		return nil, err
	}
	entries := make([]x509.RevocationListEntry, 0, len(revoked))
	for _, r := range revoked {
		b, err := hex.DecodeString(r.Serial)
		if err != nil {
			return nil, fmt.Errorf("stored serial %q: %w", r.Serial, err)
		}
		entries = append(entries, x509.RevocationListEntry{SerialNumber: new(big.Int).SetBytes(b), RevocationTime: r.RevokedAt})
	}
	now := time.Now()
	// The CRL number must grow with each new list; time does that across
	// processes without a shared counter.
	return x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number: big.NewInt(now.UnixNano()), ThisUpdate: now, NextUpdate: now.Add(time.Hour),
		RevokedCertificateEntries: entries,
	}, ca.Cert, ca.Key)
}

// certIssue issues a certificate for the host; as cert_revoke's
// compensation it issues a fresh one (a revocation cannot be taken back).
func (p *Provider) certIssue(ctx context.Context, in action.Input, eff store.LocalEffect) (any, error) {
	h, err := host(in, true)
	if err != nil {
		return nil, err
	}
	ca, err := LoadCA(ctx, p.st)
	if err != nil {
		return nil, err
	}
	c, err := ca.issue(h, p.cfg.CertValidity)
	if err != nil {
		return nil, err
	}
	if err := p.st.LocalCertInsert(ctx, in.Team, c, eff); err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", h, err)
	}
	in.Log(fmt.Sprintf("Issued certificate %s for %s, valid until %s", c.Serial, h, words.Stamp(c.NotAfter)))
	// The certificate (public) goes to the step's artifact; the key stays
	// in Postgres for the TLS listener.
	fmt.Fprint(in.Output, c.CertPEM, ca.PEM)
	return c, nil
}

// certRevoke revokes with.serial, or the host's newest certificate; as
// cert_issue's compensation, the certificate it issued.
func (p *Provider) certRevoke(ctx context.Context, in action.Input, eff store.LocalEffect) (any, error) {
	serial, h := "", ""
	if in.Compensating {
		var prev store.LocalCert
		ok, err := previous(in, &prev)
		if err != nil {
			return nil, err
		}
		if !ok || prev.Serial == "" {
			in.Log("No certificate was issued; nothing to revoke")
			return store.LocalRevocation{}, nil
		}
		serial = prev.Serial
	} else if v, ok := in.With["serial"]; ok {
		s, ok := v.(string)
		if _, err := hex.DecodeString(s); !ok || err != nil || s == "" {
			return nil, &action.Permanent{Err: fmt.Errorf("with.serial: want a hex serial, got %v", v)}
		}
		serial = s
	} else {
		var err error
		if h, err = host(in, true); err != nil {
			return nil, err
		}
	}
	rv, err := p.st.LocalCertRevoke(ctx, in.Team, serial, h, eff)
	if err != nil {
		return nil, fmt.Errorf("revoking: %w", err)
	}
	if rv.Revoked {
		in.Log(fmt.Sprintf("Revoked certificate %s for %s", rv.Serial, rv.Host))
	} else {
		in.Log(fmt.Sprintf("Certificate %s was revoked already", rv.Serial))
	}
	return rv, nil
}
