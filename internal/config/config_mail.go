package config

import (
	"fmt"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MailConfig is email over SMTP (contract §12). Host "" turns email off.
type MailConfig struct {
	Host     string
	Port     int
	Username string // "" for no AUTH
	Password string
	// TLS: smtps:// (TLS from the first byte); smtp:// uses STARTTLS when
	// the server offers it.
	TLS bool
	// From is FLIGHTDECK_SMTP_FROM, an address ("flightdeck <ops@…>" too).
	From string
	// Timeout bounds one attempt, connect to QUIT (FLIGHTDECK_SMTP_TIMEOUT,
	// default 30s): a server that hangs is given up on and retried later.
	Timeout time.Duration
}

// Enabled: email is sent.
func (m MailConfig) Enabled() bool { return m.Host != "" }

func loadMail(getenv func(string) string) (MailConfig, []string) {
	var m MailConfig
	var errs []string
	raw := strings.TrimSpace(getenv("FLIGHTDECK_SMTP_URL"))
	from := strings.TrimSpace(getenv("FLIGHTDECK_SMTP_FROM"))
	if v := getenv("FLIGHTDECK_SMTP_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("FLIGHTDECK_SMTP_TIMEOUT: want a positive duration like 30s, got %q", v))
		}
		m.Timeout = d
	}
	if raw == "" {
		if from != "" {
			errs = append(errs, "FLIGHTDECK_SMTP_FROM: needs FLIGHTDECK_SMTP_URL")
		}
		return m, errs
	}
	u, err := url.Parse(raw)
	// The URL is never quoted back: it may hold a password.
	switch {
	case err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "":
		errs = append(errs, "FLIGHTDECK_SMTP_URL: want smtp://[user:pass@]host:port or smtps://[user:pass@]host:port")
	default:
		m.Host, m.TLS = u.Hostname(), u.Scheme == "smtps"
		m.Port = 587
		if m.TLS {
			m.Port = 465
		}
		if p := u.Port(); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				errs = append(errs, "FLIGHTDECK_SMTP_URL: the port must be 1-65535")
			}
			m.Port = n
		}
		if u.User != nil {
			m.Username = u.User.Username()
			m.Password, _ = u.User.Password()
		}
	}
	if from == "" {
		errs = append(errs, "FLIGHTDECK_SMTP_FROM: required with FLIGHTDECK_SMTP_URL (the address emails come from)")
	} else if a, err := mail.ParseAddress(from); err != nil || strings.ContainsAny(from, "\r\n") {
		errs = append(errs, fmt.Sprintf("FLIGHTDECK_SMTP_FROM: want an address like flightdeck@example.com, got %q", from))
	} else {
		m.From = a.String()
	}
	return m, errs
}
