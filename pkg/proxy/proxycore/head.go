package proxycore

import (
	"bufio"
	"errors"

	"github.com/valyala/fasthttp"
)

// maxInterim bounds the interim 1xx responses skipped before the real one
// (the activator allowed 8, the queue-proxy 10; Go's Transport allows 5).
// 10 is generous for 103 Early Hints and 100 Continue and still bounds a
// peer that sends nothing else.
const maxInterim = 10

// Errors of a response head.
var (
	errTooManyInterim = errors.New("too many interim (1xx) responses")
	// errUnexpectedSwitch: 101 Switching Protocols to a request that did not
	// ask for an upgrade (RFC 9110 §15.2.2 forbids it). The connection then
	// speaks another protocol: it is closed, never pooled, and the client
	// gets an error rather than a 101 it cannot use.
	errUnexpectedSwitch = errors.New("101 Switching Protocols to a request without Upgrade")
)

// readHead reads a response head into resp, skipping interim 1xx
// responses other than 101. upgrade says the request asked for one: a 101
// is then the answer; otherwise it is ErrUnexpectedSwitch. head says the
// request was HEAD (no body follows whatever the head says).
func readHead(resp *fasthttp.Response, br *bufio.Reader, head, upgrade bool) error {
	resp.SkipBody = head
	for range maxInterim {
		if err := resp.Header.Read(br); err != nil { // resets the header first
			return err
		}
		switch sc := resp.StatusCode(); {
		case sc == fasthttp.StatusSwitchingProtocols && !upgrade:
			return errUnexpectedSwitch
		case sc >= 200 || sc < 100 || sc == fasthttp.StatusSwitchingProtocols:
			return nil
		}
	}
	return errTooManyInterim
}

// hasBody reports whether a body follows the head (RFC 9112 §6.3).
func hasBody(req *fasthttp.Request, resp *fasthttp.Response) bool {
	sc := resp.StatusCode()
	return !req.Header.IsHead() && sc >= 200 && sc != fasthttp.StatusNoContent && sc != fasthttp.StatusNotModified
}

// bodyKind is how a response body travels to the client.
type bodyKind int

const (
	noBody   bodyKind = iota // none follows the head
	buffered                 // read whole at once: the connection is free again
	streamed                 // streamed (ResponseBody) while the client takes it
)

// KindOf says how the body of resp (to req) travels: a body with a
// Content-Length up to maxBuffered is read whole; larger, chunked and
// close-delimited ones stream. maxBuffered is each proxy's own (the
// activator frees a replica's connection sooner with a smaller one).
func KindOf(req *fasthttp.Request, resp *fasthttp.Response, maxBuffered int) bodyKind {
	cl := resp.Header.ContentLength()
	switch {
	case !hasBody(req, resp):
		return noBody
	case cl >= 0 && cl <= maxBuffered:
		return buffered
	}
	return streamed
}
