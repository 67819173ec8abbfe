package statsclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/stats"
)

// Options configure a Client.
type Options struct {
	// URL is the autoscaler's base URL, e.g. http://autoscaler:8080;
	// unused with a Router.
	URL string
	// Router, when set, sends each revision's reports to the autoscaler
	// replica that decides for it (route.go).
	Router Router
	// Timeout bounds one POST; default 2s.
	Timeout time.Duration
	// QueueLength bounds the reports (and, separately, the pokes) waiting
	// to be sent; default 16 reports and 256 pokes.
	QueueLength int
	// WarnEvery limits failure warnings; default 10s.
	WarnEvery time.Duration
	// TokenFile holds the bearer token sent with every POST
	// (Authorization: Bearer): on Kubernetes the activator's projected
	// ServiceAccount token with the autoscaler's audience. It is read
	// again every TokenReload and after a 401, so a rotated token is
	// picked up. Empty: Token.
	TokenFile string
	// TokenReload is how often TokenFile is read again; default
	// DefaultTokenReload.
	TokenReload time.Duration
	// Token is a fixed bearer token, used when TokenFile is empty. Both
	// empty: no Authorization header (the autoscaler answers 401).
	Token  string
	Logger *zap.Logger     // nil: no logs
	Clock  activator.Clock // nil: the system clock
}

// Client is an activator.StatSink posting to the autoscaler.
type Client struct {
	opts    Options
	target  string
	client  *fasthttp.Client
	reports chan []stats.Stat
	pokes   chan stats.Stat
	token   *tokenSource
	held    *held // reports waiting for their replica; nil without a Router

	dropped, failed atomic.Int64 // since the last warning
	warnMu          sync.Mutex   // owns lastWarn
	lastWarn        time.Time
}

// New checks the URL and builds a Client. It starts nothing.
func New(o Options) (*Client, error) {
	if u, err := url.Parse(o.URL); o.Router == nil && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return nil, fmt.Errorf("autoscaler URL %q: must be an absolute http(s) URL such as http://127.0.0.1:8080", o.URL)
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.QueueLength <= 0 {
		o.QueueLength = 16
	}
	if o.WarnEvery <= 0 {
		o.WarnEvery = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Clock == nil {
		o.Clock = activator.SystemClock{}
	}
	if o.TokenReload <= 0 {
		o.TokenReload = defaultTokenReload
	}
	c := &Client{
		opts:    o,
		target:  strings.TrimSuffix(o.URL, "/") + stats.BatchPath,
		client:  &fasthttp.Client{Name: config.ActivatorName, MaxConnsPerHost: 4, ReadTimeout: o.Timeout, WriteTimeout: o.Timeout},
		reports: make(chan []stats.Stat, o.QueueLength),
		pokes:   make(chan stats.Stat, 16*o.QueueLength),
		token:   newTokenSource(o),
	}
	if o.Router != nil {
		c.held = &held{buckets: map[string]map[heldKey]heldStat{}}
	}
	return c, nil
}

// Report implements activator.StatSink.
func (c *Client) Report(batch []stats.Stat) {
	select {
	case c.reports <- batch:
	default:
		c.dropped.Add(int64(len(batch)))
	}
}

// Poke implements activator.StatSink.
func (c *Client) Poke(s stats.Stat) {
	select {
	case c.pokes <- s:
	default:
		c.dropped.Add(1)
	}
}

// Run sends until ctx ends, then sends what is queued (each POST still
// bounded by Timeout) and returns.
func (c *Client) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { c.sendPokes(ctx) })
	if c.held != nil {
		wg.Go(func() { c.resendLoop(ctx) })
	}
	c.sendReports(ctx)
	wg.Wait()
	return nil
}

func (c *Client) sendReports(ctx context.Context) {
	for {
		select {
		case b := <-c.reports:
			c.post(b)
		case <-ctx.Done():
			for {
				select {
				case b := <-c.reports:
					c.post(b)
				default:
					return
				}
			}
		}
	}
}

// sendPokes sends each poke at once, with any others already waiting.
func (c *Client) sendPokes(ctx context.Context) {
	var batch []stats.Stat
	for {
		select {
		case s := <-c.pokes:
			batch = append(batch[:0], s)
		case <-ctx.Done():
			return
		}
	more:
		for len(batch) < cap(c.pokes) {
			select {
			case s := <-c.pokes:
				batch = append(batch, s)
			default:
				break more
			}
		}
		c.post(batch)
	}
}

// post sends one batch; a failure is counted and warned about (rate
// limited), never retried: the next period's report supersedes it. With
// a Router the batch goes to the replicas by bucket instead (routed).
func (c *Client) post(batch []stats.Stat) {
	if c.held != nil {
		c.routed(batch)
		return
	}
	if _, err := c.send(c.target, batch); err != nil {
		c.failed.Add(1)
		c.warn(err)
	}
}

var (
	errStatus      = errors.New("unexpected status")
	errMisdirected = errors.New("not the holder of the bucket")
)

// outcome is what became of one POST.
type outcome int

const (
	taken    outcome = iota // answered 2xx
	notTaken                // refused before anything was taken (401, 421, 429, 503), or never sent (no connection)
	unknown                 // may have been taken (no answer once sent, or another 5xx)
	dropped                 // refused for what it is (400, 403, 413, 415): sending it again cannot help
)

// send POSTs one batch to target and says what became of it.
func (c *Client) send(target string, batch []stats.Stat) (outcome, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	body, err := stats.AppendBatch(make([]byte, 0, 128*len(batch)), batch) // once a period: no pool needed
	if err != nil {
		return dropped, fmt.Errorf("encoding the stats: %w", err)
	}
	auth, err := c.token.authorization()
	if err != nil {
		return notTaken, err
	}
	if auth != nil {
		req.Header.SetBytesV(fasthttp.HeaderAuthorization, auth)
	}
	req.SetBodyRaw(body)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType(stats.BatchContentType)
	req.SetRequestURI(target)
	if err := c.client.DoTimeout(req, resp, c.opts.Timeout); err != nil {
		return unsentOr(err), fmt.Errorf("posting %d stats to %s: %w", len(batch), target, err)
	}
	code := resp.StatusCode()
	if code == fasthttp.StatusUnauthorized {
		c.token.expire() // rotated under us: read it again next time
	}
	if code == fasthttp.StatusMisdirectedRequest {
		return notTaken, fmt.Errorf("posting %d stats to %s: %w: %.200s", len(batch), target, errMisdirected, resp.Body())
	}
	if code < 200 || code > 299 {
		return outcomeOf(code), fmt.Errorf("posting %d stats to %s: %w %d: %.200s", len(batch), target, errStatus, code, resp.Body())
	}
	return taken, nil
}

// outcomeOf is what an answer's status says of the report.
func outcomeOf(code int) outcome {
	switch code {
	case fasthttp.StatusUnauthorized, fasthttp.StatusMisdirectedRequest, fasthttp.StatusTooManyRequests, fasthttp.StatusServiceUnavailable:
		return notTaken
	case fasthttp.StatusBadRequest, fasthttp.StatusForbidden, fasthttp.StatusRequestEntityTooLarge, fasthttp.StatusUnsupportedMediaType:
		return dropped
	}
	return unknown
}

// unsentOr classifies a failed exchange: a connection that could not be
// made sent nothing; any other failure may have come after the report
// arrived.
func unsentOr(err error) outcome {
	var op *net.OpError
	if errors.Is(err, fasthttp.ErrDialTimeout) || errors.As(err, &op) && op.Op == "dial" {
		return notTaken
	}
	return unknown
}

func (c *Client) warn(err error) {
	now := c.opts.Clock.Now()
	c.warnMu.Lock()
	if !c.lastWarn.IsZero() && now.Sub(c.lastWarn) < c.opts.WarnEvery {
		c.warnMu.Unlock()
		return
	}
	c.lastWarn = now
	c.warnMu.Unlock()
	c.opts.Logger.Warn("cannot report to the autoscaler; requests are not affected", zap.Error(err),
		zap.Int64("failed_posts", c.failed.Swap(0)), zap.Int64("dropped_stats", c.dropped.Swap(0)))
}
