package activator

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/proxy/proxycore"
	"ebb.dev/ebb/pkg/stats"
)

// prefetchCost is the most a waiting HTTP/1.1 request holds of its body:
// fasthttp reads at most its read buffer ahead (proxycore's
// MaxRequestHeadBytes, the head included); the rest waits in the socket.
const prefetchCost = proxycore.MaxRequestHeadBytes

// keptBodyBuffer is the largest body buffer a pooled exchange keeps.
const keptBodyBuffer = 16 << 10

// exchange is one request's state from admission to the end of its
// response, pooled. It is the activator's policy for the hop
// (proxycore.Policy): the replica whose slot it holds, the resend to
// another replica, the end of a streamed answer or a tunnel.
type exchange struct {
	proxycore.Trip

	a             *Activator
	rev           *revision
	r             *replica // the slot held, or nil
	start         time.Time
	deadline      time.Time // start + the revision's timeout
	queueDeadline time.Time
	cost          int64 // bytes held while queued
	buffer        bool  // the request body is read whole once a replica is free
	queued        bool  // the request waited for its replica
	retries       int   // resends to another replica after a connection error
	status        int   // the response's status, for Knative's request metrics (0: none known)
	sent          time.Time
	waited        time.Duration     // in the queue, all waits together
	headAt        time.Time         // the answer's head came, for a streamed answer (zero: at the end)
	tunnel        net.Conn          // the replica's side of an open tunnel
	client        net.Conn          // the client's connection (HTTP/1.1)
	stream        *proxycore.Stream // the stream's trip (HTTP/2)
	scratch       []byte
	body          []byte // the buffered request body

	// While the request waits in a queue, its client's connection is
	// watched (clientWatch); the watch fields are guarded by clientWatch.mu.
	conn     net.Conn
	watchIdx int           // in clientWatch.waiting; -1: not watched
	watchGen uint64        // counts the watches of this exchange
	gone     chan struct{} // capacity 1: the client went away

	// The last replica that could not be reached, and why: a request that
	// then times out in the queue says so.
	dialErr  error
	dialAddr string

	// The last Host this pooled exchange routed to a revision, and the
	// table that did (routeBy): a keep-alive client's next request skips
	// the parse and the lookup.
	routedHost  []byte
	routedTable *routeTable
	routedRev   *revision
}

// newExchange is the pool's constructor.
func newExchange(a *Activator) *exchange {
	x := &exchange{a: a, watchIdx: -1, gone: make(chan struct{}, 1)}
	x.Init(x, maxBufferedResponse, &a.checks)
	x.Head.Want = wantFields
	return x
}

// maxBufferedResponse is the largest response body (with a
// Content-Length) read whole, releasing the replica's connection at once;
// larger, chunked and close-delimited bodies stream to the client.
const maxBufferedResponse = 16 << 10

func (x *exchange) begin(rev *revision, now time.Time) {
	cfg := rev.cfg.Load()
	x.rev, x.start, x.queued, x.retries, x.tunnel, x.status = rev, now, false, 0, nil, 0
	x.waited, x.headAt = 0, time.Time{}
	x.dialErr, x.dialAddr = nil, ""
	x.deadline = now.Add(cfg.timeout)
	x.queueDeadline = now.Add(cfg.queueTimeout)
	x.a.open.Add(1)
	rev.acct.In(now, stats.Direct)
}

// sizeBody decides how the body travels and what the request holds while
// it waits: its head (parsed), and what fasthttp read of its body (at
// most prefetchCost). A body of known length up to limit is buffered
// once a replica is free (so an idempotent request can be retried: the
// retry rule), larger and chunked bodies stream through.
func (x *exchange) sizeBody(req *fasthttp.Request, limit int) {
	x.buffer = false
	head := int64(len(req.Header.RawHeaders()))
	if !req.IsBodyStream() {
		x.cost = head + int64(len(req.Body()))
		return
	}
	cl := req.Header.ContentLength()
	x.cost = head + min(int64(max(cl, 0)), prefetchCost)
	x.buffer = cl >= 0 && cl <= limit
}

// streamWindow is what the activator's HTTP/2 server holds of a stream's
// body its handler has not read (the stream's flow-control window): a
// waiting stream holds at most this much of its body.
const streamWindow = 16 << 10

// sizeStream is sizeBody for an HTTP/2 stream: its header fields (as
// HTTP/2 counts them, 32 bytes each besides name and value) and the
// body the server takes in before anyone reads it, at most streamWindow.
func (x *exchange) sizeStream(r *http.Request) {
	cost := int64(len(r.Host) + len(r.URL.RequestURI()) + len(r.Method))
	for k, vs := range r.Header {
		for _, v := range vs {
			cost += int64(len(k) + len(v) + 32)
		}
	}
	switch {
	case r.Body == nil || r.Body == http.NoBody:
	case r.ContentLength >= 0:
		cost += min(r.ContentLength, streamWindow)
	default:
		cost += streamWindow
	}
	x.cost, x.buffer = cost, false
}

// bufferBody reads a body sizeBody chose to buffer.
func (x *exchange) bufferBody(req *fasthttp.Request) error {
	if !x.buffer {
		return nil
	}
	cl := req.Header.ContentLength()
	x.body = slices.Grow(x.body[:0], cl)[:cl]
	if n, err := io.ReadFull(req.BodyStream(), x.body); err != nil {
		return fmt.Errorf("got %d of %d bytes: %w", n, cl, err)
	}
	req.SetBodyRaw(x.body)
	return nil
}

// finish ends the request: the slot goes back, the accounting closes, the
// exchange returns to the pool.
func (x *exchange) finish() {
	a, rev := x.a, x.rev
	if x.r != nil {
		rev.throttle.release(x.r)
	}
	now := a.clock.Now()
	x.noteSlow(now)
	rev.acct.Out(now, stats.Direct)
	rev.m.kn.Observe(x.status, float64(now.Sub(x.start))/float64(time.Millisecond))
	if cap(x.body) > keptBodyBuffer {
		x.body = nil // pooled exchanges keep small buffers only
	}
	if x.stream != nil {
		x.stream.End()
	}
	x.rev, x.r, x.dialErr, x.client, x.tunnel, x.stream = nil, nil, nil, nil, nil, nil
	a.open.Add(-1)
	a.exchanges.Put(x)
}

// Upstream implements proxycore.Policy: the replica whose slot the
// request holds, within the request's deadline. The time to answer is
// learnt where queueing happens (capacity limits, or a request that
// waited), from here to the head.
func (x *exchange) Upstream() (*fasthttp.HostClient, proxycore.Deadlines) {
	if x.queued || x.r.capacity.Load() > 0 {
		x.sent = x.a.clock.Now()
	}
	return x.r.client, proxycore.Deadlines{Write: x.deadline, Head: x.deadline, Body: x.deadline}
}

// Retry implements proxycore.Policy (forward.go).
func (x *exchange) Retry(err error) error { return x.a.retry(x, err) }

// OpenTunnel implements proxycore.Policy: an upgrade's tunnel opens unless
// the drain has ended (tunnels), and holds its slot until it closes.
func (x *exchange) OpenTunnel(replica net.Conn) bool {
	if !x.a.tunnels.add(replica) {
		return false
	}
	x.tunnel = replica
	x.a.metrics.results[resultUpgraded].Inc()
	x.rev.m.results[resultUpgraded].Inc()
	return true
}

// Done implements proxycore.Policy: a streamed answer was written (or
// given up), or a tunnel closed.
func (x *exchange) Done(int) {
	a, tunnel := x.a, x.tunnel
	x.finish()
	if tunnel != nil {
		a.tunnels.done(tunnel) // after finish: a drain that saw the last one done finds nothing open
	}
}
