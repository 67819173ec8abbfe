package h2c

import (
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"
)

// switchingToH2C is the 101 answer to an h2c upgrade, written by the
// hijack handler (fasthttp would add a Content-Length, which a 1xx must
// not have).
var switchingToH2C = []byte("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")

// Take takes an HTTP/1.1 request of a fasthttp server with "Upgrade:
// h2c" (RFC 7540 §3.2): it answers 101 and serves the connection as
// HTTP/2 (Serve), the request being its stream 1, handled by u's handler
// like every stream. It reports false, having done nothing, for any other
// upgrade, and for an h2c upgrade with a body (which would have to be
// read whole first): the caller then handles the request as it would
// without this. A malformed HTTP2-Settings is answered 400 and the
// connection closed (taken).
func (u *UpgradeServer) Take(ctx *fasthttp.RequestCtx) bool {
	h := &ctx.Request.Header
	if cl := h.ContentLength(); !WantsUpgrade(h.Peek(fasthttp.HeaderUpgrade)) || cl > 0 || cl == -1 { // -1: chunked
		return false
	}
	settings, ok := DecodeSettings(h.Peek("HTTP2-Settings"))
	if !ok {
		ctx.SetConnectionClose()
		ctx.Response.SetStatusCode(fasthttp.StatusBadRequest)
		ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
		ctx.Response.SetBodyString("h2c upgrade: HTTP2-Settings must be base64url of whole settings (RFC 7540 section 3.2.1)\n")
		return true
	}
	req, err := upgradeRequest(ctx)
	if err != nil {
		return false // fasthttp took a target net/http would not: the plain path answers it
	}
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		if _, err := c.Write(switchingToH2C); err != nil {
			return
		}
		if err := c.SetDeadline(time.Time{}); err != nil { // the HTTP/2 server sets its own
			return
		}
		u.Serve(c, req, settings)
	})
	return true
}

// upgradeRequest copies a fasthttp upgrade request into the net/http
// request that becomes stream 1, without the headers of the upgrade itself.
func upgradeRequest(ctx *fasthttp.RequestCtx) (*http.Request, error) {
	h := &ctx.Request.Header
	target, err := url.ParseRequestURI(string(h.RequestURI()))
	if err != nil {
		return nil, err
	}
	r := &http.Request{URL: target,
		Method: string(h.Method()), RequestURI: string(h.RequestURI()), Host: string(h.Host()),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody, RemoteAddr: ctx.RemoteAddr().String(),
	}
	for k, v := range h.All() {
		switch key := http.CanonicalHeaderKey(string(k)); key {
		case "Connection", "Upgrade", "Http2-Settings", "Host", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Te":
		default:
			r.Header.Add(key, string(v))
		}
	}
	return r, nil
}
