package handlers

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"flightdeck/workflow/task"
)

// readJSON reads a JSON request body strictly: JSON content type (415),
// within the body limit (413), not empty, one value with no trailing data,
// no duplicate keys (400), no unknown fields and right types (422 with the
// field). It returns the raw body for hashing.
func readJSON(c echo.Context, dst any) ([]byte, error) {
	ct := c.Request().Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return nil, &APIError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Message: "send the body as application/json"}
	}
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		var he *echo.HTTPError
		if errors.As(err, &tooLarge) || (errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge) {
			return nil, &APIError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Message: "request body too large (limit 1 MiB)"}
		}
		return nil, errBadRequest("could not read the request body")
	}
	if err := decodeStrict(body, dst); err != nil {
		return nil, err
	}
	return body, nil
}

// decodeStrict decodes one JSON value into dst with the checks of readJSON.
func decodeStrict(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errBadRequest("the request body is empty")
	}
	if !json.Valid(body) {
		// json.Valid also refuses trailing data after the value.
		return errBadRequest("the request body is not valid JSON")
	}
	if key := duplicateKey(body); key != "" {
		return &APIError{Status: http.StatusBadRequest, Code: "invalid", Message: "duplicate key " + key, Field: key}
	}
	if field, bad := invalidTextPath(body); bad {
		return errInvalid(field, "%s must be UTF-8 text", fieldOrBody(field))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		// encoding/json names an unknown field by its key alone and a wrong
		// type without array indices: bodyProblem finds the full path.
		path, unknown, found := bodyProblem(body, reflect.TypeOf(dst))
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			field := typeErr.Field
			if found && !unknown {
				field = path
			}
			return errInvalid(field, "%s must be %s", fieldOrBody(field), jsonKind(typeErr.Type.Kind().String()))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			if found && unknown {
				field = path
			}
			return errInvalid(field, "unknown field %s", field)
		}
		if field := badTimeField(body, reflect.TypeOf(dst)); field != "" {
			return errInvalid(field, "%s must be a time in RFC 3339, such as 2030-01-31T09:00:00Z", field)
		}
		return errBadRequest("the request body does not match the expected shape: %v", err)
	}
	return nil
}

var timeType = reflect.TypeOf(time.Time{})

// badTimeField returns the key of the first top-level time field of the
// request type whose value is not an RFC 3339 string, or "". encoding/json
// reports such a value with Go's layout string and no field name; the
// contract wants 422 with the field.
func badTimeField(body []byte, typ reflect.Type) string {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return ""
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return ""
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if ft != timeType || name == "" || name == "-" {
			continue
		}
		for k, raw := range top {
			if foldKey(k) != foldKey(name) || string(raw) == "null" {
				continue
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return name
			}
			if _, err := time.Parse(time.RFC3339, s); err != nil {
				return name
			}
		}
	}
	return ""
}

// checkText refuses text that PostgreSQL cannot store (invalid UTF-8 or a
// NUL byte) with the field's name, before it reaches a query.
func checkText(field, s string) error {
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return errInvalid(field, "%s must be UTF-8 text without NUL bytes", field)
	}
	return nil
}

// personText applies task.PersonText, the one rule for free text a person
// writes (API, forms and sockets alike), and answers 422 with field.
func personText(field, s string, min int) (string, error) {
	s, why := task.PersonText(s, min)
	if why != "" {
		return "", errInvalid(field, "%s %s", field, why)
	}
	return s, nil
}

func fieldOrBody(f string) string {
	if f == "" {
		return "the body"
	}
	return f
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "int", "int64", "int32", "uint", "uint64":
		return "an integer"
	case "bool":
		return "true or false"
	case "map", "struct":
		return "an object"
	case "slice":
		return "a list"
	}
	return "of another type"
}

// duplicateKey returns the dotted path of the first key repeated within one
// object, or "". encoding/json silently keeps the last duplicate, which lets
// a crafted body say two things at once; and it matches field names without
// regard to case, so keys that differ only in case ("type" and "Type") are
// duplicates too. The body is already valid JSON, and json.Valid caps
// nesting depth, so the recursion is bounded.
func duplicateKey(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dup, _ := duplicateIn(dec, "")
	return dup
}

func duplicateIn(dec *json.Decoder, path string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "", nil
	}
	seen := map[string]bool{}
	for i := 0; dec.More(); i++ {
		p := joinPath(path, strconv.Itoa(i))
		if d == '{' {
			kt, err := dec.Token()
			if err != nil {
				return "", err
			}
			k, _ := kt.(string)
			p = joinPath(path, k)
			folded := foldKey(k)
			if seen[folded] {
				return p, nil
			}
			seen[folded] = true
		}
		if dup, err := duplicateIn(dec, p); dup != "" || err != nil {
			return dup, err
		}
	}
	_, err = dec.Token() // the closing delimiter
	return "", err
}

// foldKey maps every key that encoding/json would match to the same field
// onto one string: each rune becomes the smallest of its Unicode simple case
// folding orbit (the equivalence bytes.EqualFold uses, so the Kelvin sign
// folds to k and the long s to s).
func foldKey(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range k {
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		b.WriteRune(low)
	}
	return b.String()
}

// invalidTextPath returns the dotted path of the first string (a key or a
// value) holding invalid UTF-8, and whether there is one. json.Valid lets
// such bytes through and encoding/json quietly turns them into U+FFFD, so
// what would be stored is not what the client sent.
func invalidTextPath(body []byte) (string, bool) {
	if utf8.Valid(body) {
		return "", false
	}
	off := 0
	for off < len(body) {
		r, size := utf8.DecodeRune(body[off:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		off += size
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	path, _ := pathAt(dec, "", int64(off))
	return path, true
}

// pathAt walks one value and returns the path of the token that spans
// byte off of the input, if this value holds it. The body is valid JSON
// with bounded depth (json.Valid), so the recursion is bounded.
func pathAt(dec *json.Decoder, path string, off int64) (string, bool) {
	tok, err := dec.Token()
	if err != nil || dec.InputOffset() > off {
		return path, true
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return "", false
	}
	for i := 0; dec.More(); i++ {
		p := joinPath(path, strconv.Itoa(i))
		if d == '{' {
			kt, err := dec.Token()
			k, _ := kt.(string)
			p = joinPath(path, k)
			if err != nil || dec.InputOffset() > off {
				return p, true
			}
		}
		if found, ok := pathAt(dec, p, off); ok {
			return found, true
		}
	}
	_, _ = dec.Token() // the closing delimiter
	return "", false
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// canonicalHash hashes the JSON value of body, so the same value with other
// key order or spacing counts as the same request (idempotency replays).
func canonicalHash(body []byte) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		h := sha256.Sum256(body)
		return h[:]
	}
	canon, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		canon = body
	}
	h := sha256.Sum256(canon)
	return h[:]
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []string:
		return strings.Join(x, ",")
	}
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}
