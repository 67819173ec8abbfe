package proxycore

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// AmbiguousFraming reports whether a request came with both
// Content-Length and Transfer-Encoding. fasthttp frames such a request by
// Transfer-Encoding (as RFC 9112 §6.1 allows) and forgets the
// Content-Length, so the raw head is checked; requests without a body
// indication cost nothing. RFC 9112 §6.1: the server must close the
// connection after responding, because a peer in front may have framed it
// by the other header.
func AmbiguousFraming(h *fasthttp.RequestHeader) bool {
	if h.ContentLength() == -2 { // neither header
		return false
	}
	var cl, te bool
	raw := h.RawHeaders()
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i+1], raw[i+1:]
		} else {
			raw = nil
		}
		cl = cl || hasPrefixFold(line, "content-length:")
		te = te || hasPrefixFold(line, "transfer-encoding:")
	}
	return cl && te
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && bytes.EqualFold(b[:len(prefix)], []byte(prefix))
}
