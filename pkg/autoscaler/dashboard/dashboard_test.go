package dashboard

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Result(), string(body)
}

func TestHandlerServesPageAndAssets(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		name, path, contentType string
		status                  int
		contains                string
	}{
		{name: "page", path: "/", contentType: "text/html", status: 200, contains: `<script src="ui/app.js" defer></script>`},
		{name: "script", path: "/ui/app.js", contentType: "text/javascript", status: 200, contains: "new EventSource("},
		{name: "style", path: "/ui/style.css", contentType: "text/css", status: 200, contains: ".chart"},
		{name: "no directory listing", path: "/ui/", status: 404},
		{name: "unknown asset", path: "/ui/nope.js", status: 404},
		{name: "only / exactly", path: "/index.html", status: 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, h, tc.path)
			if resp.StatusCode != tc.status {
				t.Fatalf("GET %s: status %d, want %d", tc.path, resp.StatusCode, tc.status)
			}
			if tc.status != 200 {
				return
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
				t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.contentType)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("GET %s: Content-Security-Policy %q, want same-origin only", tc.path, csp)
			}
			if !strings.Contains(body, tc.contains) {
				t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
			}
		})
	}
}

// TestSelfContained: the page loads nothing from another origin (no CDN,
// no web font), and what the page references is embedded.
func TestSelfContained(t *testing.T) {
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/|@import|url\(\s*['"]?https?:`)
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := fs.ReadFile(files, path)
		// The SVG namespace is an identifier, not a resource.
		text := strings.ReplaceAll(string(data), "http://www.w3.org/2000/svg", "")
		if m := external.FindString(text); m != "" {
			t.Errorf("%s references another origin: %q", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := fs.ReadFile(files, "index.html")
	for _, m := range regexp.MustCompile(`(?:src|href)="(ui/[^"]+)"`).FindAllStringSubmatch(string(page), -1) {
		if _, err := fs.Stat(files, m[1]); err != nil {
			t.Errorf("index.html references %s, which is not embedded", m[1])
		}
	}
}
