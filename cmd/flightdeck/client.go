package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// apiClient talks to a flightdeck server's HTTP API as a script would.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

func newAPIClient(env *cliEnv) (*apiClient, error) {
	base := strings.TrimRight(env.getenv("FLIGHTDECK_URL"), "/")
	if base == "" {
		base = "http://localhost:8080"
	}
	token := env.getenv("FLIGHTDECK_TOKEN")
	if token == "" {
		return nil, fmt.Errorf("%w: set FLIGHTDECK_TOKEN (create one with flightdeck token create --email …)", errUsage)
	}
	return &apiClient{base: base, token: token, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// do sends a request and decodes a JSON answer; a non-2xx answer becomes an
// error carrying the contract's error message.
func (a *apiClient) do(ctx context.Context, method, path string, body any, header map[string]string, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := a.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("error reaching %s: %w", a.base, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if res.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code, Message, Field string } `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error.Code != "" {
			msg := e.Error.Message
			if e.Error.Field != "" && !strings.Contains(msg, e.Error.Field) {
				msg = e.Error.Field + ": " + msg
			}
			return res.StatusCode, fmt.Errorf("%s (%s, HTTP %d)", msg, e.Error.Code, res.StatusCode)
		}
		return res.StatusCode, fmt.Errorf("HTTP %d from %s", res.StatusCode, path)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return res.StatusCode, fmt.Errorf("unexpected answer from %s: %w", path, err)
		}
	}
	return res.StatusCode, nil
}

// wsURL is the API socket's URL.
func (a *apiClient) wsURL() string {
	u := a.base
	switch {
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	}
	return u + "/api/v1/ws"
}
