package queueproxy

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// requestFacts is what the proxy needs from a request head, found in one
// pass (one pass costs about what a single Peek or Del does: ~30 ns against
// ~450 ns for the nine lookups it replaces, measured in this package).
// Slices point into the header and are valid until it is modified.
type requestFacts struct {
	probe   []byte // K-Network-Probe
	proxy   []byte // K-Proxy-Request
	xff     []byte // X-Forwarded-For
	xfp     bool   // X-Forwarded-Proto present
	upgrade bool   // Connection has the "upgrade" token
	hop     bool   // some hop-by-hop header to drop is present
}

func inspect(h *fasthttp.RequestHeader) requestFacts {
	var f requestFacts
	for k, v := range h.All() {
		switch {
		case equalFold(k, stats.ProbeHeaderName):
			f.probe = v
		case equalFold(k, stats.ProxyHeaderName):
			f.proxy = v
		case equalFold(k, fasthttp.HeaderXForwardedFor):
			f.xff = v
		case equalFold(k, fasthttp.HeaderXForwardedProto):
			f.xfp = true
		case equalFold(k, fasthttp.HeaderConnection):
			f.upgrade = f.upgrade || hasToken(v, "upgrade")
		default:
			f.hop = f.hop || proxycore.IsHopHeader(k)
		}
	}
	return f
}

// equalFold compares an ASCII header name, cheaply rejecting on length.
func equalFold(b []byte, s string) bool {
	return len(b) == len(s) && bytes.EqualFold(b, []byte(s))
}

// hasToken reports whether the comma-separated list v has token (any case).
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		item := v
		if i := bytes.IndexByte(v, ','); i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		if equalFold(bytes.TrimSpace(item), token) {
			return true
		}
	}
	return false
}
