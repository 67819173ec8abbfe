package proxycore

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// framing is what a request head says of its body's framing, beyond what
// fasthttp checks (it refuses a Transfer-Encoding other than chunked or
// identity, two Transfer-Encoding fields and two Content-Lengths).
type framing uint8

const (
	// framingClear: at most one of Content-Length and chunked.
	framingClear framing = iota
	// framingAmbiguous: both Content-Length and Transfer-Encoding: chunked.
	// fasthttp frames such a request by Transfer-Encoding (as RFC 9112
	// §6.1 allows) and forgets the Content-Length. The server must close
	// the connection after answering: a peer in front may have framed it
	// by the other header.
	framingAmbiguous
	// framingUnsupported: a Transfer-Encoding whose last coding is not
	// chunked (fasthttp lets "identity" through and then reads no body at
	// all, so the body would run as the next request: a smuggled one).
	// RFC 9112 §6.3: answered 400 and the connection closed; nothing of
	// it reaches an upstream. net/http answers 501.
	framingUnsupported
	// framingTwoContentTypes: the Content-Type field more than once.
	// fasthttp keeps one content type per request (the last), so the app
	// would read another type than a filter in front that reads the first
	// (net/http's Header.Get), and a net/http app would see both. RFC 9110
	// §5.3: Content-Type is a singleton field, and a recipient may treat
	// repeats as an error: answered 400 and the connection closed, as for
	// framingUnsupported; nothing of it reaches an upstream.
	framingTwoContentTypes
)

// framingOf reads the framing fields of a request's raw head (and counts
// its Content-Type fields). fasthttp keeps neither an identity
// Transfer-Encoding, nor a Content-Length beside a chunked one, nor a
// second Content-Type, so the raw head is scanned: one look at the first
// byte of each line, a comparison only for lines that start with t, or
// with c and have a '-' eighth ("content-").
func framingOf(h *fasthttp.RequestHeader) framing {
	var cl, te, chunked bool
	types := 0
	raw := h.RawHeaders()
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) == 0 {
			continue
		}
		switch line[0] | 0x20 {
		case 'c':
			if len(line) < len("content-type:") || line[7] != '-' { // Cookie, Connection, Cache-Control: one look
				continue
			}
			switch line[8] | 0x20 {
			case 'l':
				cl = cl || isField(line, "content-length")
			case 't':
				if isField(line, "content-type") {
					types++
				}
			}
		case 't':
			if isField(line, "transfer-encoding") {
				te, chunked = true, lastCodingChunked(line)
			}
		}
	}
	switch {
	case te && !chunked:
		return framingUnsupported
	case types > 1:
		return framingTwoContentTypes
	case cl && te:
		return framingAmbiguous
	}
	return framingClear
}

// lastCodingChunked reports whether a Transfer-Encoding field line's last
// coding is chunked.
func lastCodingChunked(line []byte) bool {
	_, v, _ := bytes.Cut(line, []byte(":"))
	v = bytes.TrimRight(v, " \t\r")
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return bytes.EqualFold(bytes.TrimLeft(v, " \t"), []byte("chunked"))
}
