package activator

import (
	"bufio"
	"errors"
	"io"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// The hop to a replica uses the replica's HostClient for what it is good
// at (the connection pool, dialing, idle cleanup, buffer pools) but runs
// the exchange itself, because HostClient.Do cannot stream a large body
// without allocating a stream wrapper and three closures per request, nor
// read a small body straight into the client's response. With this, the
// common case (a small response) allocates nothing and sets one deadline.

// maxInterim bounds the 1xx responses skipped before the real one.
const maxInterim = 8

// roundTrip sends the request to x's replica and reads the response head
// into resp. A response without a body, or with a Content-Length up to
// maxBufferedResponse, is read whole and the connection goes back to the
// pool; any other body is left to stream (x.streaming reports it, and
// x.releaseConn must be called when it ends). A connection the replica had
// closed while idle is replaced once, for a body that can be sent again.
func (a *Activator) roundTrip(req *fasthttp.Request, resp *fasthttp.Response, x *exchange) error {
	closeConn := req.Header.ConnectionClose() // the client's hop, not the replica's
	req.Header.ResetConnectionClose()
	req.URI().DisablePathNormalizing = true
	var err error
	for try := 0; try < 2; try++ {
		var stale bool
		if stale, err = a.exchangeOnce(req, resp, x); err == nil || !stale || req.IsBodyStream() {
			break
		}
		resp.Reset()
	}
	if closeConn {
		req.Header.SetConnectionClose()
	}
	return err
}

// exchangeOnce is one attempt on one connection. stale says the
// connection failed before the replica sent a byte (a closed keep-alive
// connection looks like this).
func (a *Activator) exchangeOnce(req *fasthttp.Request, resp *fasthttp.Response, x *exchange) (stale bool, err error) {
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
	if err := sendRequest(hc, req, conn); err != nil {
		hc.CloseConn(cc)
		return true, err
	}
	br := hc.AcquireReader(conn)
	keep, stream, stale, err := readResponse(req, resp, br)
	if !stream {
		hc.ReleaseReader(br)
		if keep && err == nil {
			hc.ReleaseConn(cc)
		} else {
			hc.CloseConn(cc)
		}
		return stale, err
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
	resp.Header.CopyTo(&x.up.Header)
	x.up.StreamBody = true
	return false, x.up.ReadBody(br, 0) // sets up the stream; reads nothing
}

// readResponse reads the head into resp and, when there is no body or a
// small one, the body. keep says the connection can serve another
// request; stream that the body is still to be read; stale that the
// replica sent nothing at all.
func readResponse(req *fasthttp.Request, resp *fasthttp.Response, br *bufio.Reader) (keep, stream, stale bool, err error) {
	if err := readHead(&resp.Header, br); err != nil {
		return false, false, errors.Is(err, io.EOF), err
	}
	keep = !resp.Header.ConnectionClose()
	resp.Header.ResetConnectionClose()
	cl := resp.Header.ContentLength()
	switch {
	case req.Header.IsHead() || noBody(resp.StatusCode()):
		return keep, false, false, nil
	case cl >= 0 && cl <= maxBufferedResponse:
		return keep, false, false, resp.ReadBody(br, maxBufferedResponse)
	}
	return keep, true, false, nil
}

func sendRequest(hc *fasthttp.HostClient, req *fasthttp.Request, conn net.Conn) error {
	bw := hc.AcquireWriter(conn)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	hc.ReleaseWriter(bw)
	return err
}

// readHead reads a response head, skipping interim 1xx responses.
func readHead(h *fasthttp.ResponseHeader, br *bufio.Reader) error {
	for range maxInterim {
		if err := h.Read(br); err != nil {
			return err
		}
		if c := h.StatusCode(); c < 100 || c >= 200 || c == fasthttp.StatusSwitchingProtocols {
			return nil
		}
		h.Reset()
	}
	return errors.New("too many interim responses")
}

// noBody: statuses that never carry a body.
func noBody(code int) bool {
	return code < 200 || code == fasthttp.StatusNoContent || code == fasthttp.StatusNotModified
}
