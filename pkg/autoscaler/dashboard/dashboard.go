package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// files are the page and its assets: index.html, ui/app.js, ui/style.css.
//
//go:embed index.html ui
var files embed.FS

// AssetPrefix is where the page's script and style sheet are served.
const AssetPrefix = "/ui/"

// contentSecurityPolicy allows only same-origin resources: the page needs
// nothing else, and an accidental CDN reference fails loudly.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// Handler serves the page at "/" (exactly) and its assets under
// AssetPrefix. Mount both on the autoscaler's admin mux:
//
//	mux.Handle("GET /{$}", dashboard.Handler())
//	mux.Handle("GET "+dashboard.AssetPrefix, dashboard.Handler())
func Handler() http.Handler {
	assets := http.FileServerFS(files)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page, err := fs.ReadFile(files, "index.html")
		if err != nil {
			panic(err) // embedded at build time: cannot be missing
		}
		headers(w)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	mux.HandleFunc("GET "+AssetPrefix, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") { // no directory listings
			http.NotFound(w, r)
			return
		}
		headers(w)
		assets.ServeHTTP(w, r)
	})
	return mux
}

func headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
}
