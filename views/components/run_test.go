package components

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestANSISegments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []Segment
	}{
		{"plain", []Segment{{Text: "plain"}}},
		{"\x1b[31merror\x1b[0m: boom", []Segment{{Text: "error", Class: "ansi-fg-2"}, {Text: ": boom"}}},
		{"\x1b[1;92mok\x1b[22m done", []Segment{{Text: "ok", Class: "ansi-fg-11 ansi-bold"}, {Text: " done", Class: "ansi-fg-11"}}},
		{"\x1b[38;5;4mblue\x1b[39m \x1b[38;2;1;2;3mrgb", []Segment{{Text: "blue", Class: "ansi-fg-5"}, {Text: " rgb"}}},
		{"\x1b]0;title\x07\x1b[2Kline\x1b", []Segment{{Text: "line"}}}, // a title, a line erase and a lone escape dropped
		{"\x1b[", []Segment{{Text: ""}}},
		{"<b>&amp;</b>", []Segment{{Text: "<b>&amp;</b>"}}}, // text stays text
	} {
		require.Equal(t, tc.want, ANSISegments(tc.in), "%q", tc.in)
	}
}

func TestTicks(t *testing.T) {
	t.Parallel()
	labels := func(d time.Duration) []string {
		var out []string
		for _, tk := range Ticks(d) {
			out = append(out, tk.Label)
		}
		return out
	}
	require.Equal(t, []string{"0", "200 ms", "400 ms", "600 ms", "800 ms"}, labels(900*time.Millisecond))
	require.Equal(t, []string{"0", "2 s", "4 s", "6 s", "8 s"}, labels(8500*time.Millisecond))
	require.Equal(t, []string{"0", "1 m", "2 m", "3 m"}, labels(3*time.Minute+10*time.Second))
	require.Equal(t, []string{"0", "15 m", "30 m", "45 m", "1 h", "1 h 15 m"}, labels(80*time.Minute))
	require.Nil(t, Ticks(0))
	tk := Ticks(10 * time.Second)
	require.InDelta(t, 100, tk[len(tk)-1].Left, 1e-9, "a mark at the end when the span ends on a step")
}

// TestLogLines: each line has its number, an id and a link of the form
// #step-NAME-L42, its time and its text in its colours, escaped; the
// failing step's copy links to the step's lines without ids of its own.
func TestLogLines(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 678e6, time.UTC)
	lines := []LogLine{{Seq: 7, N: 41, Time: at, Text: "fine"}, {Seq: 8, N: 42, Time: at, Text: "\x1b[31m<b>bad</b>\x1b[0m"}}
	render := func(s StepView) string {
		var buf bytes.Buffer
		require.NoError(t, LogLines(s, lines).Render(context.Background(), &buf))
		return buf.String()
	}
	html := render(StepView{Index: 2, Name: "deploy_region[eu-west-1]", Lane: "step"})
	require.Contains(t, html, `id="step-deploy_region-eu-west-1--L42"`)
	require.Contains(t, html, `href="#step-deploy_region-eu-west-1--L42"`)
	require.Contains(t, html, `data-n="42"`)
	require.Contains(t, html, `data-t="03:04:05.678"`)
	require.Contains(t, html, `<span class="ansi-fg-2">&lt;b&gt;bad&lt;/b&gt;</span>`)
	require.NotContains(t, html, "\x1b")
	require.Contains(t, render(StepView{Index: 2, Name: "build", Lane: "comp"}), `id="undo-build-L41"`)
	fail := render(StepView{Index: 2, Name: "build", Lane: "fail"})
	require.Contains(t, fail, `href="#step-build-L42"`)
	require.NotContains(t, fail, `id="`)
	require.Equal(t, 2, strings.Count(fail, `class="ln"`))
}
