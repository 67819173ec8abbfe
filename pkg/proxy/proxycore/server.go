package proxycore

import (
	"bytes"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"
)

// MaxRequestHeadBytes bounds a request head on both protocols of both
// proxies: fasthttp's read buffer on HTTP/1.1 (a longer head gets 431),
// an HTTP/2 stream's header list (h2c.ServerOptions.MaxHeaderBytes: 431
// too). It is also what an HTTP/1.1 connection holds of a request that
// waits, body prefix included.
const MaxRequestHeadBytes = 8 << 10

// ServerOptions are the client-side bounds of a proxy's HTTP/1.1 server.
type ServerOptions struct {
	// Who starts the server's own answers ("activator", "queue-proxy").
	Who string
	// BadTarget, when set, is called for each request refused by the
	// target check (CheckTarget): the proxy counts it.
	BadTarget func()
	// MaxConns bounds the connections served at once (more get 503 at
	// accept). Must be > 0.
	MaxConns int
	// HeaderTimeout bounds the read of a request head, from a connection's
	// accept or a keep-alive request's first byte. Must be > 0.
	HeaderTimeout time.Duration
	// BodyTimeout bounds the read of a request body, from the end of its
	// head (fasthttp takes one read deadline per request, not one per
	// read). An upgrade has none: its tunnel lives as long as both sides
	// want. Must be > 0.
	BodyTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a keep-alive
	// connection. Must be > 0.
	IdleTimeout time.Duration
	// MaxBufferedBody is the largest request body fasthttp reads whole
	// before the handler; larger and chunked ones stream. Must be > 0.
	MaxBufferedBody int
	// Logger gets fasthttp's messages (malformed requests, without their
	// contents).
	Logger fasthttp.Logger
}

// NewServer is a proxy's HTTP/1.1 server on a data port: the bounds of o,
// heads of at most MaxRequestHeadBytes, bodies streamed, no header of its
// own in answers, connections closed at shutdown. The write deadlines are
// its listener's (WriteProgressListener). Every request gets the target
// check before h (CheckTarget), and one with both Content-Length and
// Transfer-Encoding is answered, then its connection closed (RFC 9112
// §6.1: a peer in front may have framed it by the other header); one
// with a Transfer-Encoding not ending in chunked, or with the
// Content-Type field twice, is answered 400 and its connection closed.
func NewServer(h fasthttp.RequestHandler, o ServerOptions) *fasthttp.Server {
	entry := func(ctx *fasthttp.RequestCtx) {
		sendHeldAnswer(ctx)
		framing := framingOf(&ctx.Request.Header)
		switch {
		case framing == framingUnsupported:
			refuseTransferEncoding(ctx, o.Who)
		case framing == framingTwoContentTypes:
			refuseTwoContentTypes(ctx, o.Who)
		case checkTarget(ctx, o.Who):
			h(ctx)
		case o.BadTarget != nil:
			o.BadTarget()
		}
		if framing != framingClear {
			ctx.SetConnectionClose()
		}
		holdAnswer(ctx)
	}
	return &fasthttp.Server{
		Handler:                      entry,
		Concurrency:                  o.MaxConns,
		ReadTimeout:                  o.HeaderTimeout, // the head: from accept, or a keep-alive request's first byte
		HeaderReceived:               bodyDeadline(o.BodyTimeout),
		IdleTimeout:                  o.IdleTimeout,
		ReadBufferSize:               MaxRequestHeadBytes,
		StreamRequestBody:            true, // bodies over MaxRequestBodySize stream through
		MaxRequestBodySize:           o.MaxBufferedBody,
		DisablePreParseMultipartForm: true,
		NoDefaultServerHeader:        true,
		NoDefaultDate:                true,
		NoDefaultContentType:         true,
		SecureErrorLogMessage:        true, // a malformed head is never logged (it may hold credentials)
		CloseOnShutdown:              true,
		// Every answer is flushed when it is done, even while the next
		// request is already buffered (fasthttp flushes only when none is,
		// with this off): an answer never waits for a pipelined request's
		// (sendHeldAnswer). Bodies stream (StreamRequestBody), so the read
		// buffer is kept between requests all the same; what changes is a
		// writer and a body buffer taken from their pools per request
		// rather than kept, and a first byte read alone on a new connection.
		ReduceMemoryUsage: true,
		Logger:            o.Logger,
	}
}

// noDeadline stands for "no read deadline" where fasthttp takes a duration
// (RequestConfig.ReadTimeout: 0 there means "keep the server's").
const noDeadline = 100 * 365 * 24 * time.Hour

// bodyDeadline replaces the head deadline once a head is in: the body
// gets body, an upgrade (websocket) tunnel none. A request without a body
// keeps the head's: nothing is read on its connection until the next
// request, whose idle deadline the server sets first (a clock read and a
// timer update saved on most requests).
func bodyDeadline(body time.Duration) func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
	withBody := fasthttp.RequestConfig{ReadTimeout: body}
	tunnel := fasthttp.RequestConfig{ReadTimeout: noDeadline}
	return func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		switch cl := h.ContentLength(); {
		case cl == 0 || cl == -2: // -2: neither Content-Length nor chunked
			return fasthttp.RequestConfig{} // an upgrade's tunnel too: fasthttp clears deadlines at a hijack
		case h.ConnectionUpgrade():
			return tunnel
		}
		return withBody
	}
}

// refuseTransferEncoding answers 400 to a request whose Transfer-Encoding
// does not end with chunked (FramingUnsupported); the caller closes the
// connection, so the bytes after its head are never read as a request.
func refuseTransferEncoding(ctx *fasthttp.RequestCtx, who string) {
	ctx.Response.SetStatusCode(fasthttp.StatusBadRequest)
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.Response.SetBodyString(who + ": a Transfer-Encoding other than chunked (last) cannot frame a request body; " +
		"send it chunked or with a Content-Length\n")
}

// refuseTwoContentTypes answers 400 to a request with the Content-Type
// field more than once (framingTwoContentTypes); the caller closes the
// connection.
func refuseTwoContentTypes(ctx *fasthttp.RequestCtx, who string) {
	ctx.Response.SetStatusCode(fasthttp.StatusBadRequest)
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.Response.SetBodyString(who + ": the Content-Type field more than once: it takes one value (RFC 9110 §5.3), " +
		"and the app would read another one than a proxy in front; send one Content-Type\n")
}

// checkTarget answers 400 and reports false for a request target a proxy
// would route and forward by two different hosts. Routing goes by the
// Host header; an absolute-form target (GET http://a.b/ HTTP/1.1, RFC 9112
// §3.2.2) carries its own authority, which a server must prefer: so such
// a target is accepted only when its host (and port) is the Host
// header's, ignoring case. The asterisk and authority forms (OPTIONS *,
// CONNECT) name no resource of a revision and are refused too, and so is
// a target with a fragment ('#': RFC 9112 §3.2 has none in a request
// target; a reference server reads it as part of the path, fasthttp would
// cut it, so the app would see another path). who starts the answer
// ("activator", "queue-proxy"). It runs before anything else, an h2c
// upgrade included.
func checkTarget(ctx *fasthttp.RequestCtx, who string) bool {
	uri := ctx.Request.Header.RequestURI()
	if bytes.IndexByte(uri, '#') < 0 {
		if len(uri) > 0 && uri[0] == '/' {
			return true // origin-form: the common case
		}
		target := ctx.Request.URI().Host()
		if hasHTTPScheme(uri) && bytes.EqualFold(target, ctx.Request.Header.Host()) {
			return true
		}
	}
	DiscardBody(ctx)
	ctx.Response.SetStatusCode(fasthttp.StatusBadRequest)
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.Response.SetBodyRaw(fmt.Appendf(nil,
		"%s: request target %q: use a path (/...) without a fragment (#), or an absolute URL whose host is the Host header's (%q)\n",
		who, uri, ctx.Request.Header.Host()))
	return false
}

// hasHTTPScheme reports whether an absolute-form target starts with
// http:// or https:// (any case).
func hasHTTPScheme(uri []byte) bool {
	for _, scheme := range []string{"http://", "https://"} {
		if len(uri) >= len(scheme) && bytes.EqualFold(uri[:len(scheme)], []byte(scheme)) {
			return true
		}
	}
	return false
}
