package pipeline

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"text/template"
)

// Links are a pipeline's links from a version to its source (links:
// version and compare): URL templates rendered with the deploy's params.
// A template is checked when the pipeline loads (it parses, and a
// sample rendering is an http(s) URL) and every rendering is checked
// again: a link is only ever http or https, never javascript: or data:,
// whatever a param holds.
type Links struct {
	// Version renders a version's page from .params (the deploy's).
	Version string
	// Compare renders the change between two versions from .from.version
	// and .to.version (and .params, the new deploy's).
	Compare string

	version, compare *template.Template
}

// parseLinkTemplate parses a link template strictly: a missing key is an
// error (never "<no value>" in a URL).
func parseLinkTemplate(name, s string) (*template.Template, error) {
	return template.New(name).Option("missingkey=error").Parse(s)
}

// compile parses l's templates and renders each with sample values of p's
// params, so a template that cannot work does not load.
func (l *Links) compile(p *Pipeline) error {
	sample := map[string]any{}
	for _, prm := range p.Params {
		sample[prm.Name] = "1.2.3"
	}
	var err error
	if l.Version != "" {
		if l.version, err = parseLinkTemplate("version", l.Version); err != nil {
			return fmt.Errorf("links: version: %w", err)
		}
		if _, err := renderLink(l.version, linkData(sample, nil, nil)); err != nil {
			return fmt.Errorf("links: version: %w", err)
		}
	}
	if l.Compare != "" {
		if l.compare, err = parseLinkTemplate("compare", l.Compare); err != nil {
			return fmt.Errorf("links: compare: %w", err)
		}
		if _, err := renderLink(l.compare, linkData(sample, map[string]any{"version": "1.2.2"}, map[string]any{"version": "1.2.3"})); err != nil {
			return fmt.Errorf("links: compare: %w", err)
		}
	}
	return nil
}

// linkData is what a link template sees; every value is escaped as a URL
// path segment, so a param cannot add a path, a query or a scheme.
func linkData(params, from, to map[string]any) map[string]any {
	esc := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = url.PathEscape(fmt.Sprint(v))
		}
		return out
	}
	d := map[string]any{"params": esc(params)}
	if from != nil {
		d["from"] = esc(from)
	}
	if to != nil {
		d["to"] = esc(to)
	}
	return d
}

// renderLink renders t and accepts only an absolute http(s) URL with a host.
func renderLink(t *template.Template, data map[string]any) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	s := strings.TrimSpace(b.String())
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http or https URL", s)
	}
	return u.String(), nil
}

// VersionURL is the link of a deploy's version with these params, "" when
// the pipeline has none or it does not render to an http(s) URL.
func (p *Pipeline) VersionURL(params map[string]any) string {
	if p == nil || p.Links == nil || p.Links.version == nil {
		return ""
	}
	s, err := renderLink(p.Links.version, linkData(params, nil, nil))
	if err != nil {
		return ""
	}
	return s
}

// CompareURL is the link of the change from one version to another (a
// deploy with these params), "" when the pipeline has none, a version is
// unknown, or it does not render to an http(s) URL.
func (p *Pipeline) CompareURL(from, to string, params map[string]any) string {
	if p == nil || p.Links == nil || p.Links.compare == nil || from == "" || to == "" {
		return ""
	}
	s, err := renderLink(p.Links.compare, linkData(params, map[string]any{"version": from}, map[string]any{"version": to}))
	if err != nil {
		return ""
	}
	return s
}
