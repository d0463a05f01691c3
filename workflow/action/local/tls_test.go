package local

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCertSourceServesIssuedCertificates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c := b.run(t, "local.cert_issue", callOpts{key: "c1"})
	require.NoError(t, c.err)
	ca, err := LoadCA(ctx, b.st)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)

	serve := func(cs *CertSource) string {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", cs.TLSConfig())
		require.NoError(t, err)
		srv := &http.Server{Handler: http.NotFoundHandler(), ErrorLog: log.New(io.Discard, "", 0)}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return ln.Addr().String()
	}
	dial := func(addr, name string) error {
		conn, err := tls.DialWithDialer(&net.Dialer{}, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: name})
		if err == nil {
			conn.Close()
		}
		return err
	}
	addr := serve(NewCertSource(b.st))
	require.NoError(t, dial(addr, "shop.staging.localhost"), "verified against the local CA")
	require.Error(t, dial(addr, "other.staging.localhost"), "no certificate for another name")

	// Once revoked it is no longer served (a fresh source: no cache).
	require.NoError(t, b.run(t, "local.cert_revoke", callOpts{key: "c1", undo: true, previous: c.out}).err)
	require.Error(t, dial(serve(NewCertSource(b.st)), "shop.staging.localhost"))
}
