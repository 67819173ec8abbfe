package proxycore

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// hopHeaders are the hop-by-hop request headers a proxy drops (RFC 9110
// §7.6.1), besides Connection and Transfer-Encoding, which fasthttp writes
// for each hop itself, and Upgrade, which an upgrade request needs.
var hopHeaders = [...]string{"Keep-Alive", "Proxy-Connection", "Te", "Trailer"}

// IsHopHeader reports whether key names a hop-by-hop header to drop, for a
// caller that already walks the header once.
func IsHopHeader(key []byte) bool {
	for _, name := range hopHeaders {
		if len(key) == len(name) && bytes.EqualFold(key, []byte(name)) {
			return true
		}
	}
	return false
}

// DelHopHeaders deletes the hop-by-hop headers from a request head. The
// Trailer header of a chunked request is kept: it announces the trailer
// fields that follow the body, which are forwarded (Outbound.Write); RFC
// 9110 §6.6.2 makes it end to end. On any other request it announces
// nothing that can follow, and is dropped.
func DelHopHeaders(h *fasthttp.RequestHeader) {
	chunked := h.ContentLength() == -1
	for _, name := range hopHeaders {
		if name == fasthttp.HeaderTrailer && chunked {
			continue
		}
		h.Del(name)
	}
}

// StripHopHeaders drops the client's hop-by-hop headers, and its
// Connection: close (the client's choice for its own hop, which the server
// has recorded), from a request about to be forwarded. It walks the header
// once and deletes only when there is something to delete.
func StripHopHeaders(h *fasthttp.RequestHeader) {
	h.ResetConnectionClose()
	for k := range h.All() {
		if IsHopHeader(k) {
			DelHopHeaders(h)
			return
		}
	}
}

// StripResponseHopHeaders drops the upstream's hop-by-hop headers from a
// response about to be sent to the client. It reports whether the upstream
// will keep the connection open.
func StripResponseHopHeaders(h *fasthttp.ResponseHeader) (keepAlive bool) {
	keepAlive = !h.ConnectionClose()
	h.ResetConnectionClose() // the upstream's choice for its hop, not the client's
	if len(h.Peek("Keep-Alive")) > 0 {
		h.Del("Keep-Alive")
	}
	return keepAlive
}

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
