package metrics

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// family is one metric family's help, type and sample lines.
type family struct {
	help, typ string
	body      bytes.Buffer
}

// encoder gathers the families of one scrape.
type encoder struct{ families map[string]*family }

func (e *encoder) family(name, help, typ string) *family {
	f := e.families[name]
	if f == nil {
		f = &family{help: help, typ: typ}
		e.families[name] = f
	}
	return f
}

// sample writes one line: name{labels…,extra="extraValue"} v, with the
// extra label (le, quantile) last, as client_golang prints it.
func (f *family) sample(name string, labels, values []string, extra, extraValue string, v float64) {
	b := &f.body
	b.WriteString(name)
	if len(labels) > 0 || extra != "" {
		b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			writeLabel(b, l, values[i])
		}
		if extra != "" {
			if len(labels) > 0 {
				b.WriteByte(',')
			}
			writeLabel(b, extra, extraValue)
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(formatFloat(v))
	b.WriteByte('\n')
}

func writeLabel(b *bytes.Buffer, name, value string) {
	b.WriteString(name)
	b.WriteString(`="`)
	b.WriteString(labelEscaper.Replace(value))
	b.WriteByte('"')
}

// The format escapes a backslash and a line feed in help text, and a
// double quote too in label values.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// formatFloat prints a value as Go's shortest 'g' form, with the format's
// spellings of infinities and NaN.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
