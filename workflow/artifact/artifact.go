// Package artifact keeps large outputs: written in chunks as they are
// produced (never whole in memory), redacted before they are stored, hashed,
// capped with a visible marker, and summarised with an excerpt of the lines
// that matter (first lines, error lines, the tail) for people and models.
package artifact

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"flightdeck/store"
)

// Defaults.
const (
	MaxBytesDefault = 64 << 20
	chunkSize       = 256 << 10
)

// Store creates and reads artifacts.
type Store struct {
	st       *store.Store
	MaxBytes int64
}

// New returns an artifact store; maxBytes 0 means 64 MiB.
func New(st *store.Store, maxBytes int64) *Store {
	return &Store{st: st, MaxBytes: cmp.Or(maxBytes, MaxBytesDefault)}
}

// Writer receives one artifact's bytes.
type Writer struct {
	s       *Store
	ctx     context.Context
	meta    store.ArtifactMeta
	teamID  string
	stepIdx int
	secrets []string
	keep    int // bytes held back so a secret split across writes is still caught
	pending []byte
	buf     []byte
	seq     int
	hash    hashState
	lines   lineStats
	cut     bool
	err     error
}

type hashState struct {
	h interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}
}

// Create starts an artifact of a task; secrets are redacted from it. Its
// row is made with its first stored byte: an action that prints nothing
// leaves no empty artifact (and costs no write).
func (s *Store) Create(ctx context.Context, taskID, teamID string, stepIdx int, name string, secrets []string) (*Writer, error) {
	keep := 0
	var sec []string
	for _, v := range secrets {
		if len(v) >= 4 {
			sec = append(sec, v)
			keep = max(keep, len(v)-1)
		}
	}
	return &Writer{s: s, ctx: ctx, meta: store.ArtifactMeta{TaskID: taskID, Name: SanitizeName(name)}, teamID: teamID, stepIdx: stepIdx,
		secrets: sec, keep: keep, hash: hashState{h: sha256.New()}}, nil
}

// ensureRow creates the artifact's row on first use.
func (w *Writer) ensureRow() {
	if w.meta.ID != "" || w.err != nil {
		return
	}
	w.meta.ID, w.err = w.s.st.ArtifactCreate(w.ctx, w.meta.TaskID, w.teamID, w.stepIdx, w.meta.Name, "text/plain; charset=utf-8")
}

// Write implements io.Writer. It never fails the producer: storage errors
// are kept and returned by Close.
func (w *Writer) Write(p []byte) (int, error) {
	if w.cut {
		return len(p), nil
	}
	w.pending = append(w.pending, p...)
	// Redact in blocks of whole lines (URL redaction needs whole lines),
	// holding back the last keep bytes so a secret split across writes is
	// still caught.
	if len(w.pending) < 32<<10 {
		return len(p), nil
	}
	flushTo := len(w.pending) - w.keep
	if i := bytes.LastIndexByte(w.pending[:flushTo], '\n'); i >= 0 {
		flushTo = i + 1
	}
	w.emit(Redact(string(w.pending[:flushTo]), w.secrets))
	w.pending = append(w.pending[:0], w.pending[flushTo:]...)
	return len(p), nil
}

// emit appends redacted text to the stored bytes, within the cap.
func (w *Writer) emit(s string) {
	if w.cut {
		return
	}
	room := w.s.MaxBytes - w.meta.Bytes
	if int64(len(s)) > room {
		s = s[:max(0, room)]
		w.cut = true
	}
	w.store(s)
	if w.cut {
		w.meta.Truncated = true
		w.store(fmt.Sprintf("\n[flightdeck: output truncated at %d bytes]\n", w.s.MaxBytes))
	}
}

func (w *Writer) store(s string) {
	w.hash.h.Write([]byte(s))
	w.meta.Bytes += int64(len(s))
	w.lines.add(s)
	w.buf = append(w.buf, s...)
	for len(w.buf) >= chunkSize {
		w.flushChunk(w.buf[:chunkSize])
		w.buf = append(w.buf[:0], w.buf[chunkSize:]...)
	}
}

func (w *Writer) flushChunk(b []byte) {
	w.ensureRow()
	if w.err != nil {
		return
	}
	data := append([]byte(nil), b...)
	w.err = w.s.st.ArtifactChunkAppend(w.ctx, w.meta.ID, w.seq, data)
	w.seq++
}

// Close stores what is left and the artifact's metadata, and returns its id.
func (w *Writer) Close() (string, error) {
	m, err := w.Finish()
	return m.ID, err
}

// Finish is Close returning the metadata.
func (w *Writer) Finish() (store.ArtifactMeta, error) {
	if len(w.pending) > 0 {
		w.emit(Redact(string(w.pending), w.secrets))
		w.pending = nil
	}
	if len(w.buf) > 0 {
		w.flushChunk(w.buf)
		w.buf = nil
	}
	if w.meta.Bytes == 0 && w.meta.ID == "" {
		return w.meta, w.err // nothing was written: no artifact
	}
	w.meta.SHA256 = hex.EncodeToString(w.hash.h.Sum(nil))
	w.meta.Summary, w.meta.Excerpt = w.lines.summary(w.meta.Bytes), w.lines.excerpt()
	if w.err != nil {
		return w.meta, w.err
	}
	return w.meta, w.s.st.ArtifactFinish(w.ctx, w.meta)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// SanitizeName keeps artifact names safe as file names and headers.
func SanitizeName(n string) string {
	if strings.ContainsFunc(n, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) {
		n = unsafeName.ReplaceAllString(n, "_")
	}
	n = strings.TrimLeft(n, ".")
	if len(n) > 100 {
		n = n[:100]
	}
	if n == "" {
		n = "artifact"
	}
	return n
}

var (
	urlPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)[^@\s/]+@`)
	urlToken    = regexp.MustCompile(`(?i)([?&](?:token|access_token|key|api_key|apikey|password|secret|sig|signature)=)[^&\s#"']+`)
)

// Redact hides secret values, passwords in URLs and token query parameters.
// Events, artifacts and LLM input all pass through it.
func Redact(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	// The regexps are slow on megabytes of log: run them only where a
	// cheap check says they can match.
	if strings.Contains(s, "://") && strings.Contains(s, "@") {
		s = urlPassword.ReplaceAllString(s, "${1}[REDACTED]@")
	}
	if strings.Contains(s, "=") {
		lower := strings.ToLower(s)
		for _, k := range tokenKeys {
			if strings.Contains(lower, k) {
				return urlToken.ReplaceAllString(s, "${1}[REDACTED]")
			}
		}
	}
	return s
}

var tokenKeys = []string{"token=", "key=", "password=", "secret=", "sig=", "signature="}
