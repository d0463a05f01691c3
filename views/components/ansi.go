package components

import (
	"strconv"
	"strings"
)

// Segment is a run of a log line's text in one style: Class names its
// colours and weight (ansi-fg-1 ansi-bold …), "" for plain text.
type Segment struct {
	Text, Class string
}

// ansiStyle is the SGR state at a point of a line.
type ansiStyle struct {
	fg, bg                       int // 0: default; 1-16: the 16 colours (9-16 bright)
	bold, dim, italic, underline bool
}

func (s ansiStyle) class() string {
	var parts []string
	if s.fg > 0 {
		parts = append(parts, "ansi-fg-"+strconv.Itoa(s.fg))
	}
	if s.bg > 0 {
		parts = append(parts, "ansi-bg-"+strconv.Itoa(s.bg))
	}
	if s.bold {
		parts = append(parts, "ansi-bold")
	}
	if s.dim {
		parts = append(parts, "ansi-dim")
	}
	if s.italic {
		parts = append(parts, "ansi-italic")
	}
	if s.underline {
		parts = append(parts, "ansi-underline")
	}
	return strings.Join(parts, " ")
}

// ANSISegments splits a log line by its ANSI SGR escapes (colours, bold,
// dim, italic, underline) into styled segments, as a terminal shows it.
// Other escapes (cursor moves, titles) are dropped; the text itself is
// never interpreted, so the template escapes it as any text. Colours of
// the 256-colour and true-colour forms beyond the first 16 are left out.
func ANSISegments(line string) []Segment {
	if strings.IndexByte(line, 0x1b) < 0 {
		return []Segment{{Text: line}}
	}
	var out []Segment
	var st ansiStyle
	var text strings.Builder
	flush := func() {
		if text.Len() == 0 {
			return
		}
		if n, class := len(out), st.class(); n > 0 && out[n-1].Class == class {
			out[n-1].Text += text.String() // an escape that changed nothing
		} else {
			out = append(out, Segment{Text: text.String(), Class: class})
		}
		text.Reset()
	}
	for i := 0; i < len(line); {
		c := line[i]
		if c != 0x1b {
			text.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(line) {
			break // a lone escape at the end
		}
		switch line[i+1] {
		case '[': // CSI: parameters, then a final byte in @–~
			j := i + 2
			for j < len(line) && (line[j] < 0x40 || line[j] > 0x7e) {
				j++
			}
			if j >= len(line) {
				i = len(line)
				continue
			}
			if line[j] == 'm' {
				flush()
				st = st.apply(line[i+2 : j])
			}
			i = j + 1
		case ']': // OSC: up to BEL or ST (ESC \)
			j := i + 2
			for j < len(line) && line[j] != 0x07 && !(line[j] == 0x1b && j+1 < len(line) && line[j+1] == '\\') {
				j++
			}
			switch {
			case j >= len(line):
				i = j
			case line[j] == 0x07:
				i = j + 1
			default:
				i = j + 2
			}
		default: // a two-byte escape
			i += 2
		}
	}
	flush()
	if len(out) == 0 {
		return []Segment{{Text: ""}}
	}
	return out
}

// apply reads one SGR parameter list ("1;31", "" for a reset).
func (s ansiStyle) apply(params string) ansiStyle {
	if params == "" {
		return ansiStyle{}
	}
	ps := strings.Split(params, ";")
	for k := 0; k < len(ps); k++ {
		n, err := strconv.Atoi(ps[k])
		if err != nil {
			continue
		}
		switch {
		case n == 0:
			s = ansiStyle{}
		case n == 1:
			s.bold = true
		case n == 2:
			s.dim = true
		case n == 3:
			s.italic = true
		case n == 4:
			s.underline = true
		case n == 22:
			s.bold, s.dim = false, false
		case n == 23:
			s.italic = false
		case n == 24:
			s.underline = false
		case n >= 30 && n <= 37:
			s.fg = n - 30 + 1
		case n == 39:
			s.fg = 0
		case n >= 40 && n <= 47:
			s.bg = n - 40 + 1
		case n == 49:
			s.bg = 0
		case n >= 90 && n <= 97:
			s.fg = n - 90 + 9
		case n >= 100 && n <= 107:
			s.bg = n - 100 + 9
		case (n == 38 || n == 48) && k+1 < len(ps):
			// 38;5;N (256 colours: the first 16 kept) or 38;2;R;G;B (skipped)
			color := 0
			if ps[k+1] == "5" && k+2 < len(ps) {
				if v, err := strconv.Atoi(ps[k+2]); err == nil && v >= 0 && v < 16 {
					color = v + 1
				}
				k += 2
			} else if ps[k+1] == "2" {
				k += 4
			}
			if n == 38 {
				s.fg = color
			} else {
				s.bg = color
			}
		}
	}
	return s
}
