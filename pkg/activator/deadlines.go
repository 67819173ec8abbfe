package activator

import (
	"time"

	"github.com/valyala/fasthttp"
)

// The client deadlines of the data port (Options.HeaderTimeout,
// BodyTimeout, IdleTimeout; docs/activator.md "Slow clients"): fasthttp's
// ReadTimeout bounds a head from accept or from a keep-alive request's
// first byte, IdleTimeout the wait between requests, and HeaderReceived,
// called once a head is in, sets the deadline of the rest of the request.

// noDeadline stands for "no read deadline" where fasthttp takes a duration
// (RequestConfig.ReadTimeout: 0 there means "keep the server's").
const noDeadline = 100 * 365 * 24 * time.Hour

// bodyDeadline replaces the head deadline once a head is in: the body
// gets body (queueing included), an upgrade (websocket) tunnel none.
func bodyDeadline(body time.Duration) func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
	withBody := fasthttp.RequestConfig{ReadTimeout: body}
	tunnel := fasthttp.RequestConfig{ReadTimeout: noDeadline}
	return func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		if h.ConnectionUpgrade() {
			return tunnel
		}
		return withBody
	}
}
