package h2c

import (
	"net"
	"net/http"
	"net/url"
	"sync"
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
	if cl := h.ContentLength(); !wantsUpgrade(h.Peek(fasthttp.HeaderUpgrade)) || cl > 0 || cl == -1 { // -1: chunked
		return false
	}
	settings, ok := decodeSettings(h.Peek("HTTP2-Settings"))
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
	raw := ctx.Conn()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		g := &guardedConn{Conn: c, raw: raw}
		defer g.retire()
		if _, err := g.Write(switchingToH2C); err != nil {
			return
		}
		if err := g.SetDeadline(time.Time{}); err != nil { // the HTTP/2 server sets its own
			return
		}
		u.serve(g, req, settings)
	})
	return true
}

// guardedConn is the hijacked connection as the HTTP/2 server sees it.
// fasthttp recycles its hijacked connection (and the reader under it) as
// soon as the hijack handler returns, and makes its Close a no-op until
// then; the HTTP/2 server's goroutines may outlive ServeConn (an
// asynchronous GOAWAY write, the frame reader). So Close closes the socket
// itself (raw, which unblocks them), and retire, as the handler returns,
// waits for the calls in progress and turns every later call into
// net.ErrClosed: nothing touches fasthttp's connection after it is
// recycled.
type guardedConn struct {
	net.Conn          // fasthttp's hijacked connection: valid until the handler returns
	raw      net.Conn // the socket (ctx.Conn)

	mu      sync.RWMutex // read-held by every call through Conn; write-held by retire
	retired bool
}

func (g *guardedConn) Read(p []byte) (int, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.retired {
		return 0, net.ErrClosed
	}
	return g.Conn.Read(p)
}

func (g *guardedConn) Write(p []byte) (int, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.retired {
		return 0, net.ErrClosed
	}
	return g.Conn.Write(p)
}

func (g *guardedConn) SetDeadline(t time.Time) error      { return g.raw.SetDeadline(t) }
func (g *guardedConn) SetReadDeadline(t time.Time) error  { return g.raw.SetReadDeadline(t) }
func (g *guardedConn) SetWriteDeadline(t time.Time) error { return g.raw.SetWriteDeadline(t) }
func (g *guardedConn) Close() error                       { return g.raw.Close() }

// retire closes the socket, waits for the calls in progress and makes
// every later one fail.
func (g *guardedConn) retire() {
	_ = g.raw.Close()
	g.mu.Lock()
	g.retired = true
	g.mu.Unlock()
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
