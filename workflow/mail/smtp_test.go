package mail_test

import (
	"bytes"
	"io"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"
)

// received is one message the test SMTP server took.
type received struct {
	from string
	to   []string
	raw  []byte
	msg  *mail.Message
	body string
}

// smtpServer is a real SMTP server on 127.0.0.1 (go-smtp): the sender
// speaks the real protocol over TCP to it. answer decides each DATA's
// outcome (nil: take it); rcpt may refuse a recipient.
type smtpServer struct {
	addr   string
	port   int
	srv    *smtp.Server
	mu     sync.Mutex
	got    []received
	answer func(n int) error // n: 1-based count of DATA commands so far
	rcpt   func(to string) error
	datas  int
	notify chan struct{}
}

func newSMTPServer(t *testing.T) *smtpServer {
	t.Helper()
	s := &smtpServer{notify: make(chan struct{}, 1000)}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{s: s}, nil }))
	s.srv.Domain = "127.0.0.1"
	s.srv.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = ln.Addr().String()
	s.port = ln.Addr().(*net.TCPAddr).Port
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

// byRecipient maps each recipient to the subjects they got.
func (s *smtpServer) byRecipient() map[string][]string {
	out := map[string][]string{}
	for _, m := range s.messages() {
		for _, to := range m.to {
			out[to] = append(out[to], m.msg.Header.Get("Subject"))
		}
	}
	return out
}

type session struct {
	s    *smtpServer
	from string
	to   []string
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }
func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.s.mu.Lock()
	f := x.s.rcpt
	x.s.mu.Unlock()
	if f != nil {
		if err := f(to); err != nil {
			return err
		}
	}
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	x.s.mu.Lock()
	x.s.datas++
	n, f := x.s.datas, x.s.answer
	x.s.mu.Unlock()
	if f != nil {
		if err := f(n); err != nil {
			return err
		}
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(m.Body)
	x.s.mu.Lock()
	x.s.got = append(x.s.got, received{from: x.from, to: x.to, raw: raw, msg: m, body: string(body)})
	x.s.mu.Unlock()
	select {
	case x.s.notify <- struct{}{}:
	default:
	}
	return nil
}

// header returns the raw header section of a message (up to the blank line).
func header(raw []byte) string {
	h, _, _ := strings.Cut(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n\n")
	return h
}

// newSMTPServerAt serves on addr (a port a closed server left).
func newSMTPServerAt(t *testing.T, addr string) *smtpServer {
	t.Helper()
	s := &smtpServer{notify: make(chan struct{}, 1000), addr: addr}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{s: s}, nil }))
	s.srv.Domain = "127.0.0.1"
	var ln net.Listener
	var err error
	for range 50 { // the closed listener's port may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
	}
	require.NoError(t, err)
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// listenHang accepts connections on 127.0.0.1 and never says a word.
func listenHang(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().(*net.TCPAddr).Port
}
