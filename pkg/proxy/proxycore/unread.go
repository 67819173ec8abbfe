package proxycore

import (
	"errors"
	"io"
	"time"

	"github.com/valyala/fasthttp"
)

// Limits of DiscardBody: net/http's (a larger unread body closes the
// connection), and a bound on the time it may take.
const (
	maxDiscard     = 256 << 10
	discardTimeout = time.Second
)

// DiscardBody settles a request body that nobody read, before a proxy
// answers without forwarding it: fasthttp would parse an unread body as
// the next request. A short one is read and dropped (up to 256 KiB within
// a second, as net/http does), so the connection can carry the next
// request and the client reads the answer instead of a reset; a longer or
// slower one closes the connection after the answer.
//
// The two proxies used to differ here (one skipped, the other closed);
// skipping is net/http's way and keeps a refused client's connection.
func DiscardBody(ctx *fasthttp.RequestCtx) {
	req := &ctx.Request
	if !bodyUnread(req) {
		return
	}
	if cl := req.Header.ContentLength(); cl > maxDiscard {
		ctx.SetConnectionClose()
		return
	}
	conn := ctx.Conn()
	if err := conn.SetReadDeadline(time.Now().Add(discardTimeout)); err != nil {
		ctx.SetConnectionClose()
		return
	}
	body, meter := io.Reader(req.BodyStream()), (*chunkMeter)(nil)
	if req.Header.ContentLength() == -1 {
		body, meter = meterChunks(body, conn) // its extensions within net/http's budget (chunkext.go)
	}
	n, err := io.CopyN(io.Discard, body, maxDiscard+1)
	meter.stop()
	if !errors.Is(err, io.EOF) || n > maxDiscard {
		ctx.SetConnectionClose()
	}
	_ = conn.SetReadDeadline(time.Time{}) // the server sets its own before the next read
}
