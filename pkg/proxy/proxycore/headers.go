package proxycore

import (
	"bytes"
	"net/netip"

	"github.com/valyala/fasthttp"
)

// The hop-by-hop fields of RFC 9110 §7.6.1, which a proxy consumes and
// never forwards, both ways: Connection and every field it names (its
// "close" token closes the connection after the exchange), Keep-Alive,
// Proxy-Connection, TE, Trailer, Upgrade (kept for an upgrade) and the
// proxy's own credentials, Proxy-Authorization and Proxy-Authenticate
// (Go's ReverseProxy drops them too; the HTTP/2 path is that proxy, so
// both protocols agree). Two exceptions, as net/http's ReverseProxy: a
// chunked request keeps its Trailer announcement (its trailer fields are
// forwarded, Outbound.Write; RFC 9110 §6.6.2 makes it end to end), and
// "TE: trailers" is kept (gRPC needs it; it is the only TE value a
// server may act on). A response keeps Trailer too.

// hopFields are the fixed hop-by-hop fields, in canonical form.
var hopFields = [...]string{"Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Upgrade", "Proxy-Authorization",
	"Proxy-Authenticate"}

// fieldKind is what a hop makes of a field name (kindOf).
type fieldKind uint8

const (
	otherField      fieldKind = iota
	connectionField           // Connection
	upgradeField              // Upgrade
	teField                   // TE
	hopField                  // the other hopFields
	xffField                  // X-Forwarded-For
	xfpField                  // X-Forwarded-Proto
)

// kindOf classifies a field name, in any case. It runs for every field of
// every request and answer, so it looks at the length first and compares
// exactly before it compares ignoring case (fasthttp hands names over in
// canonical form unless told not to).
func kindOf(k []byte) fieldKind {
	switch len(k) {
	case 2:
		return kindIf(k, "Te", teField)
	case 7:
		if equalFold(k, "Upgrade") {
			return upgradeField
		}
		return kindIf(k, "Trailer", hopField)
	case 10:
		if equalFold(k, "Connection") {
			return connectionField
		}
		return kindIf(k, "Keep-Alive", hopField)
	case 15:
		return kindIf(k, "X-Forwarded-For", xffField)
	case 16:
		return kindIf(k, "Proxy-Connection", hopField)
	case 17:
		return kindIf(k, "X-Forwarded-Proto", xfpField)
	case 18:
		return kindIf(k, "Proxy-Authenticate", hopField)
	case 19:
		return kindIf(k, "Proxy-Authorization", hopField)
	}
	return otherField
}

func kindIf(k []byte, name string, kind fieldKind) fieldKind {
	if equalFold(k, name) {
		return kind
	}
	return otherField
}

// isHopField reports whether key is one of hopFields.
func isHopField(key []byte) bool {
	switch kindOf(key) {
	case upgradeField, teField, hopField:
		return true
	}
	return false
}

// equalFold compares a field name or token with s ignoring ASCII case,
// cheaply: s holds letters and '-' only (the names and tokens the hop
// knows), for which setting bit 0x20 folds the case and equates nothing
// else a field name or token may hold.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(s) {
		if b[i]|0x20 != s[i]|0x20 {
			return false
		}
	}
	return true
}

// framingFields are never deleted because a Connection header names
// them: fasthttp frames the message by them on each hop.
func isFramingField(name []byte) bool {
	return equalFold(name, fasthttp.HeaderContentLength) || equalFold(name, fasthttp.HeaderTransferEncoding) ||
		equalFold(name, fasthttp.HeaderHost)
}

// tokens calls fn for each comma-separated element of v, trimmed.
func tokens(v []byte, fn func(tok []byte)) {
	for len(v) > 0 {
		item := v
		if i := bytes.IndexByte(v, ','); i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		if item = bytes.TrimSpace(item); len(item) > 0 {
			fn(item)
		}
	}
}

// hasToken reports whether the comma-separated list v has token (any case).
func hasToken(v []byte, token string) bool {
	found := false
	tokens(v, func(t []byte) { found = found || equalFold(t, token) })
	return found
}

// RequestHead is what a hop learns of a client's HTTP/1.1 request head in
// one pass (Scan), and what it then changes for the upstream
// (prepareRequest). The values of Want's fields point into the header and
// are valid until it changes.
type RequestHead struct {
	// Want names up to two fields the proxy reads itself (its probe, its
	// routing or marker headers), in canonical form; Got holds their
	// values after Scan (nil: absent).
	Want [2]string
	Got  [2][]byte

	xffLines   int  // X-Forwarded-For lines
	xfp        bool // X-Forwarded-Proto present
	connection bool // a Connection field beyond fasthttp's "close" flag
	upgrade    bool // Connection has "upgrade" and an Upgrade field is present
	hop        bool // some other hop-by-hop field is present
	teTrailers bool // TE has "trailers"

	clientIP, clientIPText []byte // the last client address formatted (clientText)
}

// Upgrade reports whether the request asks for a protocol upgrade
// (Connection: upgrade and an Upgrade field).
func (r *RequestHead) Upgrade() bool { return r.upgrade }

// scan reads h once. It does not allocate.
func (r *RequestHead) scan(h *fasthttp.RequestHeader) {
	r.Got = [2][]byte{}
	r.xffLines, r.xfp, r.connection, r.upgrade, r.hop, r.teTrailers = 0, false, false, false, false, false
	upgradeToken, upgradeHeader := false, false
	for k, v := range h.All() {
		if r.wanted(k, v) {
			continue
		}
		switch kindOf(k) {
		case xffField:
			r.xffLines++
		case xfpField:
			r.xfp = true
		case connectionField:
			if string(v) != "close" { // fasthttp keeps an exact "close" as a flag, which All yields so
				r.connection = true
			}
			upgradeToken = upgradeToken || hasToken(v, "upgrade")
		case upgradeField:
			upgradeHeader = true
			r.hop = true
		case teField:
			r.hop = true
			r.teTrailers = r.teTrailers || hasToken(v, "trailers")
		case hopField:
			r.hop = true
		}
	}
	r.upgrade = upgradeToken && upgradeHeader
}

// wanted records k's value if the proxy wants it (Want).
func (r *RequestHead) wanted(k, v []byte) bool {
	for i, w := range r.Want {
		if len(w) == len(k) && len(w) > 0 && equalFold(k, w) {
			r.Got[i] = v
			return true
		}
	}
	return false
}

// prepareRequest readies a scanned request head for the upstream, in
// place: the hop-by-hop fields go (the upgrade's own kept for an
// upgrade, as "Connection: Upgrade"), the client is appended to
// X-Forwarded-For (all its lines joined in one: the last line is the one
// most readers take) and X-Forwarded-Proto is set unless present. It
// reports whether the client asked to close its connection after the
// answer (a "close" token, in any case and among any others; fasthttp
// sees only an exact "Connection: close"). scratch is the caller's
// buffer, returned grown.
func prepareRequest(ctx *fasthttp.RequestCtx, r *RequestHead, scratch []byte) (closeAfter bool, _ []byte) {
	closeAfter, scratch = dropHopFields(&ctx.Request.Header, r, scratch)
	return closeAfter, setForwarded(ctx, r, scratch)
}

// dropHopFields is prepareRequest's part for the hop-by-hop fields.
func dropHopFields(h *fasthttp.RequestHeader, r *RequestHead, scratch []byte) (closeAfter bool, _ []byte) {
	closeAfter = h.ConnectionClose()
	if r.connection {
		var named bool
		closeAfter, named, scratch = connectionTokens(h.All(), scratch)
		closeAfter = closeAfter || h.ConnectionClose()
		h.ResetConnectionClose()
		h.Del(fasthttp.HeaderConnection)
		if named {
			tokens(scratch, func(name []byte) {
				if !isFramingField(name) && !(r.upgrade && equalFold(name, fasthttp.HeaderUpgrade)) {
					h.DelBytes(name)
				}
			})
		}
	} else {
		h.ResetConnectionClose()
	}
	if r.hop {
		chunked := h.ContentLength() == -1
		for _, name := range hopFields {
			if !(name == fasthttp.HeaderTrailer && chunked) && !(name == fasthttp.HeaderUpgrade && r.upgrade) {
				h.Del(name)
			}
		}
		if r.teTrailers {
			h.Set(fasthttp.HeaderTE, "trailers")
		}
	}
	if r.upgrade {
		h.Set(fasthttp.HeaderConnection, "Upgrade")
	}
	return closeAfter, scratch
}

// connectionTokens reads every Connection line of a head (all: its
// fields in order) into scratch as one comma-separated list of the
// fields they name ("close", "keep-alive" and "upgrade" left out), and
// reports whether they say close and whether they name any field.
func connectionTokens(all func(func(k, v []byte) bool), scratch []byte) (closeAfter, named bool, _ []byte) {
	scratch = scratch[:0]
	for k, v := range all {
		if !equalFold(k, fasthttp.HeaderConnection) {
			continue
		}
		tokens(v, func(t []byte) {
			switch {
			case equalFold(t, "close"):
				closeAfter = true
			case equalFold(t, "keep-alive"), equalFold(t, "upgrade"):
			default:
				named = true
				scratch = append(append(scratch, t...), ',')
			}
		})
	}
	return closeAfter, named, scratch
}

// setForwarded appends the client's address to X-Forwarded-For (one line
// for all the client's lines) and sets X-Forwarded-Proto unless a proxy
// in front already did. scratch is the caller's buffer, returned grown.
func setForwarded(ctx *fasthttp.RequestCtx, r *RequestHead, scratch []byte) []byte {
	h := &ctx.Request.Header
	scratch = scratch[:0]
	if r.xffLines > 0 {
		for k, v := range h.All() {
			if kindOf(k) == xffField && len(v) > 0 {
				scratch = append(append(scratch, v...), ", "...)
			}
		}
	}
	if ip := r.clientText(ctx.RemoteIP()); len(ip) > 0 {
		scratch = append(scratch, ip...)
	} else if len(scratch) > 0 {
		scratch = scratch[:len(scratch)-2]
	}
	if r.xffLines > 1 {
		h.Del(fasthttp.HeaderXForwardedFor)
	}
	if len(scratch) > 0 {
		h.SetCanonical(keyXForwardedFor, scratch)
	}
	if !r.xfp {
		if ctx.IsTLS() {
			h.SetCanonical(keyXForwardedProto, valueHTTPS)
		} else {
			h.SetCanonical(keyXForwardedProto, valueHTTP)
		}
	}
	return scratch
}

// The fields setForwarded sets, in canonical form (SetCanonical skips
// fasthttp's normalization of the name, most of the cost of a Set).
var (
	keyXForwardedFor   = []byte(fasthttp.HeaderXForwardedFor)
	keyXForwardedProto = []byte(fasthttp.HeaderXForwardedProto)
	valueHTTP          = []byte("http")
	valueHTTPS         = []byte("https")
)

// clientText is ip in text (an IPv4-mapped address as IPv4), empty for
// none. A keep-alive connection's requests come from one address: the
// last one formatted is kept.
func (r *RequestHead) clientText(ip []byte) []byte {
	if len(ip) == len(r.clientIP) && string(ip) == string(r.clientIP) {
		return r.clientIPText
	}
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return nil
	}
	r.clientIP = append(r.clientIP[:0], ip...)
	r.clientIPText = a.Unmap().AppendTo(r.clientIPText[:0])
	return r.clientIPText
}

// prepareResponse drops the hop-by-hop fields of an upstream's answer
// (the fields its Connection names too; a 101's are its own business and
// stay) and reports whether the upstream keeps the connection open
// ("close" among its Connection tokens, in any case, says it does not).
// scratch is the caller's buffer, returned grown.
func prepareResponse(h *fasthttp.ResponseHeader, scratch []byte) (keepAlive bool, _ []byte) {
	keepAlive = !h.ConnectionClose()
	h.ResetConnectionClose() // the upstream's choice for its hop, not the client's
	var connection, hop bool
	for k := range h.All() {
		switch kindOf(k) {
		case connectionField:
			connection = true
		case upgradeField, teField, hopField:
			hop = true
		}
	}
	if connection {
		closeAfter, named, s := connectionTokens(h.All(), scratch)
		scratch, keepAlive = s, keepAlive && !closeAfter
		h.Del(fasthttp.HeaderConnection)
		if named {
			tokens(scratch, func(name []byte) {
				if !isFramingField(name) && !equalFold(name, fasthttp.HeaderTrailer) {
					h.DelBytes(name)
				}
			})
		}
	}
	if hop {
		for _, name := range hopFields {
			if name != fasthttp.HeaderTrailer {
				h.Del(name)
			}
		}
	}
	return keepAlive, scratch
}
