// Package static embeds flightdeck's browser assets and serves them under
// fingerprinted URLs (/static/css/app.3f2a9c1b.css), so they can be cached
// forever and a new build changes every URL whose file changed.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed css js img
var files embed.FS

var (
	hashed   = map[string]string{} // name → fingerprinted name
	unhashed = map[string]string{} // fingerprinted name → name
)

func init() {
	_ = fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ext := path.Ext(name)
		fp := strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:4]) + ext
		hashed[name], unhashed[fp] = fp, name
		return nil
	})
}

// URL returns the fingerprinted URL of an asset ("css/app.css").
func URL(name string) string {
	if fp, ok := hashed[name]; ok {
		return "/static/" + fp
	}
	return "/static/" + name
}

// Handler serves fingerprinted assets under /static/ with a year-long
// immutable cache; unknown names are 404.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := unhashed[strings.TrimPrefix(r.URL.Path, "/static/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		b, err := files.ReadFile(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = "application/octet-stream"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(b)
	})
}
