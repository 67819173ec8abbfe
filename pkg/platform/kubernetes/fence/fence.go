// Package fence holds a write for a revision to its writer's hold on the
// revision's bucket from the moment the write is checked to the moment
// its bytes leave for the API server, and bounds how long it may take
// after that.
//
// A caller marks the context of a write with the buckets it writes for
// (For). The check happens twice: by the caller before it starts (Check,
// a cheap early refusal), and by the client's transport (Transport, set
// on the rest.Config with WrapTransport) right before each request is
// sent, after everything that can wait in between: client-go's rate
// limiter, a Retry-After, a paused process. The transport gives the
// request a deadline at the end of the hold (the context, which caps the
// round trip, and the API server's own `timeout`, which cancels the
// request there if it reaches storage too late), and counts it in flight
// until it ends, so that a bucket let go voluntarily is released only
// once no write for it can still be on its way.
//
// It owns no state of its own: the holds are the Keeper's
// (leader.Buckets). It must not decide anything about buckets.
package fence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ErrFenced refuses a write for a revision whose bucket this replica may
// not write for now: it lost the bucket, let it go, or has not renewed it
// within the renew deadline (a pause, an API cut-off).
var ErrFenced = errors.New("this replica may not write for the revision now: its bucket's Lease is lost, let go, " +
	"or not renewed within the renew deadline")

// Keeper holds the buckets (leader.Buckets).
type Keeper interface {
	// hold admits one write for bucket i: how long it may still take
	// (remaining > 0), and done, to be called once when it has ended.
	// remaining <= 0 refuses it (done is nil then).
	Hold(i int) (remaining time.Duration, done func())
}

type claimKey struct{}

// claim is what For puts in a context.
type claim struct {
	keeper  Keeper
	buckets []int
}

// For is ctx marked as the context of writes for the revisions of
// buckets, held by keeper. A nil keeper or no bucket leaves ctx as it is
// (the writes are not fenced: a replica without buckets writes for all).
func For(ctx context.Context, keeper Keeper, buckets ...int) context.Context {
	if keeper == nil || len(buckets) == 0 {
		return ctx
	}
	return context.WithValue(ctx, claimKey{}, claim{keeper: keeper, buckets: buckets})
}

// hold admits one write made with ctx: how long it may take and done,
// to be called when it has ended; or ErrFenced (wrapped, naming the
// bucket) when a bucket it is for is not held now. A context without a
// claim is admitted for ever (remaining 0, err nil).
func hold(ctx context.Context) (remaining time.Duration, done func(), err error) {
	c, ok := ctx.Value(claimKey{}).(claim)
	if !ok {
		return 0, func() {}, nil
	}
	dones := make([]func(), 0, len(c.buckets))
	all := func() {
		for _, d := range dones {
			d()
		}
	}
	for k, i := range c.buckets {
		r, d := c.keeper.Hold(i)
		if r <= 0 {
			all()
			return 0, nil, fmt.Errorf("bucket %d: %w", i, ErrFenced)
		}
		dones = append(dones, d)
		if k == 0 || r < remaining {
			remaining = r
		}
	}
	return remaining, sync.OnceFunc(all), nil
}

// Check is Hold for a caller that only asks: nil while every bucket of
// ctx's claim is held now.
func Check(ctx context.Context) error {
	_, done, err := hold(ctx)
	if done != nil {
		done()
	}
	return err
}

// Transport checks each request whose context carries a claim right
// before it is sent (after client-go's rate limiter and any retry wait),
// refuses it with ErrFenced when its bucket is not held, and otherwise
// sends it with a deadline at the end of the hold: the context's, and
// the API server's `timeout` parameter. It counts the request in flight
// until its answer's body is closed, or, when no answer came, until its
// deadline. Use it as rest.Config.WrapTransport.
func Transport(rt http.RoundTripper) http.RoundTripper { return fencedTransport{next: rt} }

type fencedTransport struct{ next http.RoundTripper }

func (f fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	remaining, done, err := hold(req.Context())
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, err
	}
	if remaining <= 0 { // not a fenced write
		return f.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), remaining)
	out := req.Clone(ctx)
	q := out.URL.Query()
	// The API server ends the request at this timeout from when it read
	// it (its request deadline); whole milliseconds, rounded down (at
	// least one: zero would mean its default). Half of what is left: the
	// other half is the time the request may take to leave (gate).
	timeout := max(remaining/2, time.Millisecond).Truncate(time.Millisecond)
	q.Set("timeout", strconv.FormatInt(timeout.Milliseconds(), 10)+"ms")
	out.URL.RawQuery = q.Encode()
	if out.Body != nil && out.Body != http.NoBody {
		out.Body = &gate{ReadCloser: out.Body, ctx: ctx, timeout: timeout}
		if get := req.GetBody; get != nil {
			out.GetBody = func() (io.ReadCloser, error) {
				b, err := get()
				if err != nil || b == nil || b == http.NoBody {
					return b, err
				}
				return &gate{ReadCloser: b, ctx: ctx, timeout: timeout}, nil
			}
		}
	}
	resp, err := f.next.RoundTrip(out)
	if err != nil {
		// No answer (the deadline, a cancel, a broken connection): the
		// API server may have read the request and may still apply it,
		// until its timeout. It stays in flight until then, so that a
		// release never lets another replica write before it.
		cancel()
		time.AfterFunc(remaining, done)
		return nil, err
	}
	resp.Body = &endOnClose{ReadCloser: resp.Body, end: func() { cancel(); done() }}
	return resp, nil
}

// gate checks the fence once more when the request's body is first read:
// the HTTP client reads it as it writes the request out, after it got a
// connection (a dial, a wait for an idle one) and its writer goroutine
// ran, waits that the context's deadline does not always stop (a
// connection that comes as the deadline passes is used). The API server
// counts the request's timeout from when it reads it, so a request that
// left late would be applied late: the body is refused, and with it the
// write (nothing of it is sent over HTTP/1.1, whose headers wait in the
// buffer for the body; over HTTP/2 the stream is reset before its body
// ends, and the server applies no write without its body), unless the
// fence, read again (held, not revoked, on both clocks), is still open
// for the whole timeout the server was given.
type gate struct {
	io.ReadCloser
	ctx     context.Context
	timeout time.Duration
	passed  bool // read by the client's writer only
}

func (g *gate) Read(p []byte) (int, error) {
	if !g.passed {
		left, done, err := hold(g.ctx)
		if done != nil {
			done()
		}
		if err != nil {
			return 0, err
		}
		if left < g.timeout {
			return 0, fmt.Errorf("the request left %v too late for its %v timeout: %w", g.timeout-left, g.timeout, ErrFenced)
		}
		g.passed = true
	}
	return g.ReadCloser.Read(p)
}

// endOnClose ends a fenced request when its answer's body is closed.
type endOnClose struct {
	io.ReadCloser
	once sync.Once
	end  func()
}

func (e *endOnClose) Close() error {
	err := e.ReadCloser.Close()
	e.once.Do(e.end)
	return err
}
