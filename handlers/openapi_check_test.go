package handlers_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"flightdeck/handlers"
)

// apiContract checks requests and answers against the served OpenAPI
// document. Every server that setup starts goes through it (checkAPI), so
// every /api/v1 request of the handler tests is checked.
type apiContract struct {
	doc    *openapi3.T
	router routers.Router
}

var loadAPIContract = sync.OnceValues(func() (*apiContract, error) {
	b, err := handlers.OpenAPIJSON()
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return nil, err
	}
	router, err := legacy.NewRouter(doc) // validates the document too
	if err != nil {
		return nil, err
	}
	return &apiContract{doc: doc, router: router}, nil
})

// exchange is one request and its answer as the server saw them.
type exchange struct {
	req     *http.Request
	reqBody []byte
	status  int
	header  http.Header
	body    []byte
}

// check returns what in x the document does not allow. A request the
// document calls invalid must be refused with a 4xx; every answer must be
// documented for its operation and status and match its schema.
func (a *apiContract) check(x exchange) error {
	req := x.req.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(x.reqBody))
	if req.Method == http.MethodHead {
		// Every GET answers HEAD alike, without the body (RFC 9110); the
		// recorder still sees the body the GET would send.
		req.Method = http.MethodGet
	}
	route, params, err := a.router.FindRoute(req)
	if err != nil {
		// Not a documented operation: only the error body may answer.
		if x.status < 400 || x.status >= 500 {
			return fmt.Errorf("undocumented operation answered %d: %w", x.status, err)
		}
		return a.checkSchema("Error", x.body)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: authenticated}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && (x.status < 400 || x.status >= 500) {
		return fmt.Errorf("the document refuses the request, yet the server answered %d: %w", x.status, err)
	}
	sse := strings.HasPrefix(x.header.Get("Content-Type"), "text/event-stream")
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: x.status, Header: x.header, Body: io.NopCloser(bytes.NewReader(x.body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: sse},
	})
	if err != nil {
		return err
	}
	if sse {
		return a.checkEventStream(x.body)
	}
	return nil
}

// checkEventStream checks each frame of a Server-Sent Events answer: its
// data is an Event and its id the event's seq.
func (a *apiContract) checkEventStream(body []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 4<<20)
	id := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			if err := a.checkSchema("Event", data); err != nil {
				return fmt.Errorf("event stream frame %s: %w", id, err)
			}
			var e struct{ Seq int }
			_ = json.Unmarshal(data, &e)
			if id != strconv.Itoa(e.Seq) {
				return fmt.Errorf("event stream frame id %q, but the event's seq is %d", id, e.Seq)
			}
		}
	}
	return sc.Err()
}

func (a *apiContract) checkSchema(name string, body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("want a %s body: %w (%q)", name, err, body)
	}
	return a.doc.Components.Schemas[name].Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

// authenticated is what each security scheme asks of a request: the
// bearer header, or the session cookie.
func authenticated(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	r := in.RequestValidationInput.Request
	switch in.SecuritySchemeName {
	case "bearerAuth":
		if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") && tok != "" {
			return nil
		}
	case "sessionCookie":
		if ck, err := r.Cookie("fd_session"); err == nil && ck.Value != "" {
			return nil
		}
	}
	return errors.New("no " + in.SecuritySchemeName)
}

// checkAPI wraps the server's handler so that every /api/v1 request and
// its answer are checked against the document; a mismatch fails t. The
// check runs before the handler returns, so before the server's Close
// (a cleanup of t) returns.
func checkAPI(t *testing.T, next http.Handler) http.Handler {
	contract, err := loadAPIContract()
	if err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/v1/") {
			next.ServeHTTP(w, r)
			return
		}
		reqBody, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.hijacked {
			return // a WebSocket: its messages are the contract's §5, not HTTP answers
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		x := exchange{req: r, reqBody: reqBody, status: rec.status, header: w.Header().Clone(), body: rec.body.Bytes()}
		if err := contract.check(x); err != nil {
			t.Errorf("OpenAPI: %s %s answered %d: %v\nbody: %.2000s", r.Method, r.URL.RequestURI(), x.status, err, x.body)
		}
	})
}

// recorder keeps a copy of the answer while it goes to the client.
type recorder struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
	hijacked bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.hijacked = true
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
