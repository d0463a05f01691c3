package artifact_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/artifact"
)

func setup(t testing.TB) (*store.Store, *artifact.Store, string, string, []string) {
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "a@acme.test", "acme", auth.RoleDeployer)
	tk := testfactory.Task(t, st, u, nil)
	return st, artifact.New(st, 0), tk.ID, u.Memberships[0].TeamID, u.TeamIDs()
}

func read(t testing.TB, st *store.Store, id string) []byte {
	var buf bytes.Buffer
	require.NoError(t, st.ArtifactChunks(t.Context(), id, func(b []byte) error { buf.Write(b); return nil }))
	return buf.Bytes()
}

func TestRoundTripManyChunks(t *testing.T) {
	t.Parallel()
	st, as, taskID, teamID, teams := setup(t)
	w, err := as.Create(t.Context(), taskID, teamID, 1, "../deploy log.txt", nil)
	require.NoError(t, err)
	var want bytes.Buffer
	for i := range 40000 {
		line := fmt.Sprintf("line %d of a long and boring deploy log, nothing to see here\n", i)
		if i == 31337 {
			line = "ERROR: certificate expired\n"
		}
		want.WriteString(line)
		_, _ = w.Write([]byte(line))
	}
	m, err := w.Finish()
	require.NoError(t, err)
	require.Greater(t, want.Len(), 2<<20)
	got := read(t, st, m.ID)
	require.Equal(t, want.Bytes(), got)
	sum := sha256.Sum256(got)
	require.Equal(t, hex.EncodeToString(sum[:]), m.SHA256)
	require.Equal(t, "_deploy_log.txt", m.Name)
	require.Contains(t, m.Excerpt, "31338: ERROR: certificate expired")
	require.Contains(t, m.Excerpt, "40000: line 39999")
	require.Contains(t, m.Excerpt, "1: line 0")
	require.Contains(t, m.Summary, "40000 lines, 1 error lines")
	meta, err := st.ArtifactGet(t.Context(), teams, m.ID)
	require.NoError(t, err)
	require.Equal(t, m.Bytes, meta.Bytes)
}

func TestRedaction(t *testing.T) {
	t.Parallel()
	st, as, taskID, teamID, _ := setup(t)
	w, err := as.Create(t.Context(), taskID, teamID, 1, "out", []string{"hunter2-secret"})
	require.NoError(t, err)
	_, _ = w.Write([]byte("password is hunt"))
	_, _ = w.Write([]byte("er2-secret ok\nfetch https://bob:pa55w0rd@repo.test/x?token=abc123&page=2\n"))
	m, err := w.Finish()
	require.NoError(t, err)
	got := string(read(t, st, m.ID))
	require.NotContains(t, got, "hunter2")
	require.NotContains(t, got, "pa55w0rd")
	require.NotContains(t, got, "abc123")
	require.Contains(t, got, "password is [REDACTED] ok")
	require.Contains(t, got, "https://bob:[REDACTED]@repo.test/x?token=[REDACTED]&page=2")
}

func TestTruncation(t *testing.T) {
	t.Parallel()
	st, _, taskID, teamID, _ := setup(t)
	as := artifact.New(st, 1000)
	w, err := as.Create(t.Context(), taskID, teamID, 1, "big", nil)
	require.NoError(t, err)
	for range 100 {
		_, _ = w.Write([]byte(strings.Repeat("x", 99) + "\n"))
	}
	m, err := w.Finish()
	require.NoError(t, err)
	require.True(t, m.Truncated)
	got := string(read(t, st, m.ID))
	require.True(t, strings.HasSuffix(got, "[flightdeck: output truncated at 1000 bytes]\n"))
	require.Len(t, got, 1000+len("\n[flightdeck: output truncated at 1000 bytes]\n"))
}

func TestSanitizeName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"deploy.log": "deploy.log", "../../etc/passwd": "_.._etc_passwd", "": "artifact", "a b\"c": "a_b_c", ".hidden": "hidden"} {
		require.Equal(t, want, artifact.SanitizeName(in), in)
	}
}

func BenchmarkArtifactWriteRead(b *testing.B) {
	st, as, taskID, teamID, _ := setup(b)
	line := []byte(strings.Repeat("log line payload ", 6) + "\n")
	const size = 16 << 20
	b.SetBytes(size)
	for b.Loop() {
		w, err := as.Create(b.Context(), taskID, teamID, 1, "bench", []string{"s3cr3t-value"})
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < size; n += len(line) {
			_, _ = w.Write(line)
		}
		m, err := w.Finish()
		if err != nil {
			b.Fatal(err)
		}
		_ = read(b, st, m.ID)
	}
}

// A step's output may hold any bytes: the artifact keeps them exactly,
// and its summary and excerpt (text columns) show the undecodable ones as
// U+FFFD. Before, the summary's NUL failed ArtifactFinish and the whole
// artifact was lost (bytes=0, never complete).
func TestBytesKeptWhole(t *testing.T) {
	t.Parallel()
	for name, out := range map[string]string{
		"NUL":            "a\na\x00b\n",
		"InvalidUTF8":    "a\n\xff\xfe error\n",
		"CutInsideARune": "a" + strings.Repeat("é", 200) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st, as, taskID, teamID, teams := setup(t)
			w, err := as.Create(t.Context(), taskID, teamID, 1, "step.log", nil)
			require.NoError(t, err)
			_, _ = w.Write([]byte(out))
			m, err := w.Finish()
			require.NoError(t, err)
			got := read(t, st, m.ID)
			require.Equal(t, []byte(out), got, "bytes kept exactly")
			sum := sha256.Sum256([]byte(out))
			require.Equal(t, hex.EncodeToString(sum[:]), m.SHA256)
			meta, err := st.ArtifactGet(t.Context(), teams, m.ID)
			require.NoError(t, err, "the artifact is complete")
			require.Equal(t, int64(len(out)), meta.Bytes)
			require.True(t, utf8.ValidString(meta.Summary) && utf8.ValidString(meta.Excerpt))
			if name != "CutInsideARune" {
				require.Contains(t, meta.Excerpt, "\uFFFD", "the odd bytes are shown")
			}
		})
	}
}

func TestVisible(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":        "plain",
		"a\x00b":       "a\uFFFDb",
		"\xff\xfeok":   "\uFFFD\uFFFDok",
		"é\xc3":        "é\uFFFD",
		"tab\tstays\r": "tab\tstays\r",
	} {
		require.Equal(t, want, artifact.Visible(in), "%q", in)
	}
}
