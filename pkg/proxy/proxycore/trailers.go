package proxycore

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// forwardTrailers makes a chunked body hand the trailer fields it reads
// (after its last chunk) to h, the response being written to the client:
// fasthttp's server writes h's trailer fields after a streamed chunked
// body once the stream has ended, which is after the last Read. Call it
// after Reset; a body that is not chunked has no trailers, and Reset
// forgets h. Fields that must not be trailers (framing, routing,
// authentication, Content-Type and the like: fasthttp's list, RFC 9110
// §6.5.1) and malformed lines are dropped.
func (b *responseBody) forwardTrailers(h *fasthttp.ResponseHeader) {
	if b.length == -1 {
		b.chunks.trailers = h
	}
}

// addTrailer records one trailer line "name: value" in h. A name the
// upstream announced in its Trailer header is already among h's trailer
// names (fasthttp parsed it with the head), so only its value is set.
func addTrailer(h *fasthttp.ResponseHeader, line []byte) {
	i := bytes.IndexByte(line, ':')
	if i <= 0 || line[0] == ' ' || line[0] == '\t' { // no name, or an obsolete line folding
		return
	}
	name, value := line[:i], bytes.TrimSpace(line[i+1:])
	if !announced(h, name) && h.AddTrailerBytes(name) != nil {
		return // not allowed as a trailer
	}
	h.SetBytesKV(name, value)
}

// announced reports whether name is among h's trailer names.
func announced(h *fasthttp.ResponseHeader, name []byte) bool {
	for t := range h.Trailers() {
		if bytes.EqualFold(t, name) {
			return true
		}
	}
	return false
}
