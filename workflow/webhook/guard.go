package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked: the URL's host is, or resolves to, an address webhooks may not
// reach (loopback, private, link-local, multicast, unspecified) and is not
// on the allow-list.
var ErrBlocked = errors.New("address not allowed for webhooks")

// Resolver looks up a host's addresses; *net.Resolver is one. Tests inject
// their own (there is no DNS where they run).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard keeps webhooks away from internal addresses (SSRF). It checks a URL
// when it is registered and again, on the resolved address actually
// connected to, every time it dials: a name that resolved to a public
// address at registration may point inside later (DNS rebinding).
type Guard struct {
	allowHosts map[string]bool
	allowNets  []netip.Prefix
	resolver   Resolver
}

// NewGuard builds a guard from FLIGHTDECK_WEBHOOK_ALLOW entries (host names,
// IP addresses or CIDRs) and a resolver (nil: the system's).
func NewGuard(allow []string, r Resolver) (*Guard, error) {
	g := &Guard{allowHosts: map[string]bool{}, resolver: r}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
		case strings.Contains(a, "/"):
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, fmt.Errorf("FLIGHTDECK_WEBHOOK_ALLOW: %q is not a CIDR", a)
			}
			g.allowNets = append(g.allowNets, p.Masked())
		default:
			if ip, err := netip.ParseAddr(strings.Trim(a, "[]")); err == nil {
				g.allowNets = append(g.allowNets, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
				continue
			}
			g.allowHosts[strings.ToLower(a)] = true
		}
	}
	return g, nil
}

// blockedAddr reports whether ip is an internal address, also when it is
// an IPv4 address embedded in NAT64 (64:ff9b::/96) or 6to4 (2002::/16) form,
// which a gateway would translate into that IPv4 address.
func blockedAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return blockedAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixToFour.Contains(ip):
			return blockedAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	return !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() ||
		ip.IsUnspecified() || cgnat.Contains(ip) || ip == broadcast
}

var (
	cgnat     = netip.MustParsePrefix("100.64.0.0/10") // shared address space, internal in practice
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	broadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})
	loopback4 = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	loopback6 = netip.IPv6Loopback()
)

func (g *Guard) addrAllowed(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range g.allowNets {
		if p.Contains(ip) {
			return true
		}
	}
	return !blockedAddr(ip)
}

// hostIP parses host as an IP address, including the forms inet_aton (and
// so many resolvers and HTTP clients) accepts: "2130706433", "0x7f.1",
// "0177.0.0.1", "127.1". Such a host is never sent to DNS.
func hostIP(host string) (netip.Addr, bool) {
	host = strings.Trim(host, "[]")
	if i := strings.IndexByte(host, '%'); i >= 0 { // zone
		host = host[:i]
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap(), true
	}
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		base := 10
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil && p != "" {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	switch len(vals) {
	case 1:
		n = vals[0]
	case 2:
		if vals[0] > 255 || vals[1] > 0xffffff {
			return netip.Addr{}, false
		}
		n = vals[0]<<24 | vals[1]
	case 3:
		if vals[0] > 255 || vals[1] > 255 || vals[2] > 0xffff {
			return netip.Addr{}, false
		}
		n = vals[0]<<24 | vals[1]<<16 | vals[2]
	case 4:
		for _, v := range vals {
			if v > 255 {
				return netip.Addr{}, false
			}
		}
		n = vals[0]<<24 | vals[1]<<16 | vals[2]<<8 | vals[3]
	}
	if n > 0xffffffff {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// resolve returns the addresses to dial for host and whether the host
// itself is allow-listed.
func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, bool, error) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if ip, ok := hostIP(h); ok {
		return []netip.Addr{ip}, false, nil
	}
	// RFC 6761: localhost and every name under .localhost are loopback,
	// whatever a resolver (a wildcard record, a hosts file) would say.
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return []netip.Addr{loopback4, loopback6}, g.allowHosts[h], nil
	}
	ips, err := g.resolver.LookupNetIP(ctx, "ip", h)
	if err != nil {
		return nil, false, lookupError(host, err)
	}
	if len(ips) == 0 {
		return nil, false, fmt.Errorf("could not resolve %s: no addresses", host)
	}
	for i := range ips {
		ips[i] = ips[i].Unmap()
	}
	return ips, g.allowHosts[h], nil
}

// lookupError says why host did not resolve without the resolver's own
// error text, which names the server's internal DNS resolver
// ("lookup x on 10.0.0.2:53: no such host"); the message reaches clients
// (422 at registration, a delivery's error).
func lookupError(host string, err error) error {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return fmt.Errorf("host %s does not resolve", host)
	case errors.As(err, &dnsErr) && dnsErr.IsTimeout, errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("could not resolve %s: the lookup timed out", host)
	}
	return fmt.Errorf("could not resolve %s", host)
}

// CheckURL validates a webhook URL for registration: http or https, a host,
// no user info, and every address the host resolves to allowed.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return errors.New("must be an absolute http(s) URL")
	}
	if u.User != nil {
		return errors.New("must not carry a user name or password")
	}
	if len(raw) > 2048 {
		return errors.New("must be at most 2048 characters")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errors.New("has an invalid port")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, hostAllowed, err := g.resolve(ctx, u.Hostname())
	if err != nil {
		return err
	}
	if hostAllowed {
		return nil
	}
	for _, ip := range ips {
		if g.addrAllowed(ip) {
			continue
		}
		if lit, ok := hostIP(u.Hostname()); ok && lit == ip {
			return fmt.Errorf("%w (%s)", ErrBlocked, ip)
		}
		return fmt.Errorf("%w: %s resolves to %s", ErrBlocked, u.Hostname(), ip)
	}
	return nil
}

// DialContext dials addr after resolving its host with the guard's
// resolver, refusing internal addresses. The dialer's Control function
// checks the address of the very socket being connected, so nothing that
// changes between the lookup and the connect can slip through.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, hostAllowed, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: unparsable address %q", ErrBlocked, address)
			}
			if !hostAllowed && !g.addrAllowed(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrBlocked, ap.Addr())
			}
			return nil
		},
	}
	var errs []error
	for _, ip := range ips {
		if !hostAllowed && !g.addrAllowed(ip) {
			errs = append(errs, fmt.Errorf("%w: %s resolves to %s", ErrBlocked, host, ip))
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
