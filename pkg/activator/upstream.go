package activator

import (
	"bufio"
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxycore"
)

// The hop to a replica uses the replica's HostClient for what it is good
// at (the connection pool, dialing, idle cleanup, buffer pools) but runs
// the exchange itself, because HostClient.Do cannot stream a large body
// without allocating a stream wrapper and three closures per request, nor
// read a small body straight into the client's response. With this, the
// common case (a small response) allocates nothing and sets one deadline.
// The mechanics shared with the queue-proxy (writing, response heads,
// error classes, the retry rule) are pkg/proxycore's.

// roundTrip sends the request to x's replica and reads the response head
// into resp. A response without a body, or with a Content-Length up to
// maxBufferedResponse, is read whole and the connection goes back to the
// pool; any other body is left to stream (x.streaming reports it, and
// x.releaseConn must be called when it ends). A connection the replica
// dropped after the request was written is replaced once, if the retry
// rule allows (x.out.MaySendAgain: an idempotent request with its body in
// memory; a connection it had closed while idle looks like this).
func (a *Activator) roundTrip(req *fasthttp.Request, resp *fasthttp.Response, x *exchange) error {
	closeConn := req.Header.ConnectionClose() // the client's hop, not the replica's
	proxycore.StripHopHeaders(&req.Header)
	req.URI().DisablePathNormalizing = true
	err := a.tryConns(req, resp, x)
	if closeConn {
		req.Header.SetConnectionClose()
	}
	return err
}

// maxStaleConns bounds the pooled connections found closed (and dropped)
// before one request is written: a replica that closed many idle
// connections at once.
const maxStaleConns = 8

// tryConns runs attempts on the replica's connections: past pooled ones
// its replica had closed (nothing written), and once more after a dropped
// connection if the retry rule allows. An error before the write goes back
// to forward (another replica).
func (a *Activator) tryConns(req *fasthttp.Request, resp *fasthttp.Response, x *exchange) error {
	resent := false
	for stale := 0; ; {
		wrote, err := a.exchangeOnce(req, resp, x)
		switch {
		case errors.Is(err, proxycore.ErrStaleConn) && stale < maxStaleConns:
			stale++
			continue
		case err == nil || !wrote || resent || !x.out.MaySendAgain(err):
			return err
		}
		resent = true
		resp.Reset()
	}
}

// exchangeOnce is one attempt on one connection. wrote says the request
// was written (in part, perhaps) before it failed.
func (a *Activator) exchangeOnce(req *fasthttp.Request, resp *fasthttp.Response, x *exchange) (wrote bool, err error) {
	hc := x.r.client
	timeout := time.Until(x.deadline)
	if timeout <= 0 {
		return false, fasthttp.ErrTimeout
	}
	cc, err := hc.AcquireConn(timeout, false)
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	if err := conn.SetDeadline(x.deadline); err != nil {
		hc.CloseConn(cc)
		return false, err
	}
	if err := x.out.Write(hc, conn, req); err != nil {
		hc.CloseConn(cc)
		return true, err
	}
	br := hc.AcquireReader(conn)
	keep, stream, err := readResponse(req, resp, br)
	if !stream {
		hc.ReleaseReader(br)
		if keep && err == nil {
			hc.ReleaseConn(cc)
		} else {
			hc.CloseConn(cc)
		}
		return true, err
	}
	// The body streams: the connection stays with the exchange until
	// fasthttp has written the body (the one allocation of this path).
	x.releaseConn = func(complete bool) {
		hc.ReleaseReader(br)
		if keep && complete {
			hc.ReleaseConn(cc)
		} else {
			hc.CloseConn(cc)
		}
	}
	x.respBody.Reset(br, resp.Header.ContentLength())
	x.respBody.ForwardTrailers(&resp.Header) // chunked: its trailers follow the body to the client
	return true, nil
}

// readResponse reads the head into resp and, when there is no body or a
// small one, the body. keep says the connection can serve another
// request; stream that the body is still to be read.
func readResponse(req *fasthttp.Request, resp *fasthttp.Response, br *bufio.Reader) (keep, stream bool, err error) {
	if err := proxycore.ReadHead(resp, br, req.Header.IsHead(), false); err != nil {
		return false, false, err
	}
	keep = proxycore.StripResponseHopHeaders(&resp.Header)
	switch proxycore.KindOf(req, resp, maxBufferedResponse) {
	case proxycore.NoBody:
		return keep, false, nil
	case proxycore.Buffered:
		return keep, false, resp.ReadBody(br, maxBufferedResponse)
	}
	return keep, true, nil
}
