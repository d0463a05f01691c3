package webhook

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeResolver answers from a map (there is no DNS where tests run); a
// host with several answers in turn (rebinding) gets the next each time.
type fakeResolver struct {
	hosts map[string][][]netip.Addr
	calls atomic.Int64
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	answers, ok := f.hosts[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	n := int(f.calls.Add(1)) - 1
	return append([]netip.Addr(nil), answers[min(n, len(answers)-1)]...), nil
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// countingListener accepts on every local address and counts connections.
func countingListener(t *testing.T) (port int, accepts *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	accepts = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepts
}

func TestHostIP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		host string
		want string // "" for not an address
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"10.1", "10.0.0.1"},
		{"0", "0.0.0.0"},
		{"[::1]", "::1"},
		{"::ffff:127.0.0.1", "127.0.0.1"},
		{"example.com", ""},
		{"1.2.3.4.5", ""},
		{"256.1.1.1", ""},
		{"4294967296", ""},
		{"1e3", ""},
	} {
		t.Run(tc.host, func(t *testing.T) {
			ip, ok := hostIP(tc.host)
			if tc.want == "" {
				require.False(t, ok, "got %s", ip)
				return
			}
			require.True(t, ok)
			require.Equal(t, tc.want, ip.String())
		})
	}
}

func TestGuardRefusesInternalAddresses(t *testing.T) {
	t.Parallel()
	port, accepts := countingListener(t)
	res := &fakeResolver{hosts: map[string][][]netip.Addr{
		"internal.test": {addrs("127.0.0.1")},
		"v6.test":       {addrs("::1")},
		"metadata.test": {addrs("169.254.169.254")},
		"private.test":  {addrs("10.0.0.1")},
		"mixed.test":    {addrs("10.1.2.3", "127.0.0.1")},
		"mapped.test":   {addrs("::ffff:127.0.0.1")},
		"zero.test":     {addrs("0.0.0.0")},
		"multi.test":    {addrs("224.0.0.1")},
	}}
	g, err := NewGuard(nil, res)
	require.NoError(t, err)
	client := NewClient(g, 2*time.Second)
	corpus := []string{
		"127.0.0.1", "[::1]", "0.0.0.0", "10.0.0.1", "169.254.169.254", "2130706433", "[::ffff:127.0.0.1]",
		"0x7f.1", "127.1", "0177.0.0.1", "192.168.1.1", "172.16.0.1", "[fe80::1]", "[fc00::1]", "224.0.0.1",
		"[64:ff9b::7f00:1]", "[2002:a00:1::1]", "100.64.0.1",
		"internal.test", "v6.test", "metadata.test", "private.test", "mixed.test", "mapped.test", "zero.test", "multi.test",
	}
	for _, host := range corpus {
		u := fmt.Sprintf("http://%s:%d/hook", host, port)
		t.Run(host, func(t *testing.T) {
			err := g.CheckURL(t.Context(), u)
			require.ErrorIs(t, err, ErrBlocked, "registration must refuse %s", u)
			// Dial time, as if the URL had been stored anyway.
			res, err := client.Post(u, "application/json", strings.NewReader("{}"))
			if res != nil {
				res.Body.Close()
			}
			require.ErrorIs(t, err, ErrBlocked, "dial must refuse %s", u)
		})
	}
	require.Zero(t, accepts.Load(), "no connection may reach the listener")

	t.Run("UnresolvableRefused", func(t *testing.T) {
		require.Error(t, g.CheckURL(t.Context(), "https://nowhere.test/x"))
	})
	t.Run("BadURLs", func(t *testing.T) {
		for _, u := range []string{"", "ftp://x.test/", "/relative", "http://", "https://user:pw@93.184.216.34/", "http://93.184.216.34:99999/"} {
			require.Error(t, g.CheckURL(t.Context(), u), u)
		}
	})
	t.Run("PublicAccepted", func(t *testing.T) {
		require.NoError(t, g.CheckURL(t.Context(), "https://93.184.216.34/hook"))
		require.NoError(t, g.CheckURL(t.Context(), "https://[64:ff9b::5db8:d822]/hook"), "NAT64 of a public address")
	})
}

func TestGuardRebindingCaughtAtDial(t *testing.T) {
	t.Parallel()
	port, accepts := countingListener(t)
	// Public at registration, loopback when the delivery dials.
	res := &fakeResolver{hosts: map[string][][]netip.Addr{"rebind.test": {addrs("93.184.216.34"), addrs("127.0.0.1")}}}
	g, err := NewGuard(nil, res)
	require.NoError(t, err)
	u := fmt.Sprintf("http://rebind.test:%d/", port)
	require.NoError(t, g.CheckURL(t.Context(), u))
	_, err = NewClient(g, 2*time.Second).Post(u, "application/json", strings.NewReader("{}"))
	require.ErrorIs(t, err, ErrBlocked)
	require.Zero(t, accepts.Load())
}

func TestRedirectsNotFollowed(t *testing.T) {
	t.Parallel()
	port, accepts := countingListener(t)
	targets := []string{
		fmt.Sprintf("http://127.0.0.1:%d/", port), // allowed by the allow-list: only not following stops it
		fmt.Sprintf("http://internal.test:%d/", port),
		fmt.Sprintf("http://2130706433:%d/", port),
	}
	var hits atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		http.Redirect(w, r, targets[int(n-1)%len(targets)], []int{302, 307, 308}[int(n-1)%3])
	}))
	t.Cleanup(recv.Close)
	g, err := NewGuard([]string{"127.0.0.1/32"}, &fakeResolver{hosts: map[string][][]netip.Addr{"internal.test": {addrs("127.0.0.1")}}})
	require.NoError(t, err)
	client := NewClient(g, 2*time.Second)
	for range targets {
		res, err := client.Post(recv.URL, "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		res.Body.Close()
		require.GreaterOrEqual(t, res.StatusCode, 300, "the redirect itself is the answer")
		require.Less(t, res.StatusCode, 400)
	}
	require.EqualValues(t, len(targets), hits.Load())
	require.Zero(t, accepts.Load(), "no redirect may be followed")

	// Control: the listener does count a connection that is allowed.
	_, _ = client.Post(targets[0], "application/json", strings.NewReader("{}"))
	require.EqualValues(t, 1, waitCount(t, accepts, 1))
}

func waitCount(t *testing.T, c *atomic.Int64, want int64) int64 {
	t.Helper()
	require.Eventually(t, func() bool { return c.Load() >= want }, 5*time.Second, 5*time.Millisecond)
	return c.Load()
}

func TestAllowListByHost(t *testing.T) {
	t.Parallel()
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	t.Cleanup(recv.Close)
	port := recv.Listener.Addr().(*net.TCPAddr).Port
	res := &fakeResolver{hosts: map[string][][]netip.Addr{"hooks.test": {addrs("127.0.0.1")}, "other.test": {addrs("127.0.0.1")}}}
	g, err := NewGuard([]string{"hooks.test"}, res)
	require.NoError(t, err)
	u := fmt.Sprintf("http://hooks.test:%d/", port)
	require.NoError(t, g.CheckURL(t.Context(), u))
	r, err := NewClient(g, 2*time.Second).Post(u, "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, 204, r.StatusCode)
	require.ErrorIs(t, g.CheckURL(t.Context(), fmt.Sprintf("http://other.test:%d/", port)), ErrBlocked)

	_, err = NewGuard([]string{"10.0.0.0/33"}, nil)
	require.Error(t, err)
}

func TestSignStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	// The test vector of the Standard Webhooks reference libraries.
	key := SigningKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	got := Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", got)
	require.Equal(t, []byte("plain-task-secret-123"), SigningKey("plain-task-secret-123"))
	require.True(t, strings.HasPrefix(NewSecret(), SecretPrefix))
	require.NotEqual(t, NewSecret(), NewSecret())
	require.Equal(t, MessageID("w", "t", 1), MessageID("w", "t", 1))
	require.NotEqual(t, MessageID("w", "t", 1), MessageID("w", "t", 2))
}

func TestScheduleDelay(t *testing.T) {
	t.Parallel()
	var s Schedule
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, 5 * time.Second}, {2, 30 * time.Second}, {3, 2 * time.Minute}, {4, 10 * time.Minute}, {5, time.Hour}, {6, 6 * time.Hour}, {40, 6 * time.Hour}} {
		for range 20 {
			d := s.Delay(tc.n)
			require.GreaterOrEqual(t, d, time.Duration(float64(tc.want)*0.8), "attempt %d", tc.n)
			require.LessOrEqual(t, d, time.Duration(float64(tc.want)*1.2), "attempt %d", tc.n)
		}
	}
	own := Schedule{Steps: []time.Duration{time.Millisecond}, Every: time.Minute}
	require.LessOrEqual(t, own.Delay(1), 1200*time.Microsecond, "its own steps")
	require.GreaterOrEqual(t, own.Delay(2), 48*time.Second, "then its own every")
}

// failingResolver fails every lookup with err.
type failingResolver struct{ err error }

func (f failingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, f.err
}

// A host that does not resolve is said so without naming the server's
// DNS resolver, whose address the system's error text carries. Before:
// "could not resolve foo.localhost: lookup foo.localhost on 10.0.0.2:53:
// no such host".
func TestLookupErrorsDoNotNameTheResolver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&net.DNSError{Err: "no such host", Name: "foo.invalid", Server: "10.0.0.2:53", IsNotFound: true}, "host foo.invalid does not resolve"},
		{&net.DNSError{Err: "i/o timeout", Name: "foo.invalid", Server: "10.0.0.2:53", IsTimeout: true}, "could not resolve foo.invalid: the lookup timed out"},
		{&net.DNSError{Err: "server misbehaving", Name: "foo.invalid", Server: "10.0.0.2:53"}, "could not resolve foo.invalid"},
	} {
		g, err := NewGuard(nil, failingResolver{tc.err})
		require.NoError(t, err)
		err = g.CheckURL(t.Context(), "https://foo.invalid/hook")
		require.EqualError(t, err, tc.want)
		_, err = g.DialContext(t.Context(), "tcp", "foo.invalid:443")
		require.EqualError(t, err, tc.want, "a delivery's error alike")
		require.NotContains(t, err.Error(), "10.0.0.2")
	}
}

// askedResolver answers every name with a public address and records that
// it was asked.
type askedResolver struct{ asked chan string }

func (a askedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a.asked <- host
	return addrs("93.184.216.34"), nil
}

// Names under .localhost are loopback (RFC 6761): the guard answers them
// itself, so a resolver that says otherwise (a DNS server with a wildcard
// record, a hosts file) is never asked. Before, they went to the system
// resolver, and a public answer let them through.
func TestLocalhostNamesAreLoopbackWithoutDNS(t *testing.T) {
	t.Parallel()
	res := askedResolver{asked: make(chan string, 10)}
	g, err := NewGuard(nil, res)
	require.NoError(t, err)
	for _, u := range []string{"http://localhost/x", "http://hooks.localhost/x", "https://a.b.LOCALHOST./x", "http://x.localhost:8080/"} {
		err := g.CheckURL(t.Context(), u)
		require.ErrorIs(t, err, ErrBlocked, u)
		require.Contains(t, err.Error(), "127.0.0.1", u)
	}
	_, err = g.DialContext(t.Context(), "tcp", "hooks.localhost:9")
	require.ErrorIs(t, err, ErrBlocked)
	require.NoError(t, g.CheckURL(t.Context(), "http://localhost.example/x"), "only the .localhost domain")
	require.Equal(t, "localhost.example", <-res.asked)
	require.Empty(t, res.asked, "no .localhost name went to the resolver")

	allowed, err := NewGuard([]string{"hooks.localhost"}, res)
	require.NoError(t, err)
	require.NoError(t, allowed.CheckURL(t.Context(), "http://hooks.localhost/x"), "allow-listed by name")
	require.Empty(t, res.asked)
}
