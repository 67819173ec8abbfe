package statsclient

import (
	"context"
	"errors"
	"fmt"
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
	// URL is the autoscaler's base URL, e.g. http://autoscaler:8080.
	URL string
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

	dropped, failed atomic.Int64 // since the last warning
	warnMu          sync.Mutex   // owns lastWarn
	lastWarn        time.Time
}

// New checks the URL and builds a Client. It starts nothing.
func New(o Options) (*Client, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
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
		o.TokenReload = DefaultTokenReload
	}
	return &Client{
		opts:    o,
		target:  strings.TrimSuffix(o.URL, "/") + stats.BatchPath,
		client:  &fasthttp.Client{Name: config.ActivatorName, MaxConnsPerHost: 4, ReadTimeout: o.Timeout, WriteTimeout: o.Timeout},
		reports: make(chan []stats.Stat, o.QueueLength),
		pokes:   make(chan stats.Stat, 16*o.QueueLength),
		token:   newTokenSource(o),
	}, nil
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
// limited), never retried.
func (c *Client) post(batch []stats.Stat) {
	if err := c.send(batch); err != nil {
		c.failed.Add(1)
		c.warn(err)
	}
}

var errStatus = errors.New("unexpected status")

func (c *Client) send(batch []stats.Stat) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	body, err := stats.AppendBatch(make([]byte, 0, 128*len(batch)), batch) // once a period: no pool needed
	if err != nil {
		return fmt.Errorf("encoding the stats: %w", err)
	}
	auth, err := c.token.authorization()
	if err != nil {
		return err
	}
	if auth != nil {
		req.Header.SetBytesV(fasthttp.HeaderAuthorization, auth)
	}
	req.SetBodyRaw(body)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType(stats.BatchContentType)
	req.SetRequestURI(c.target)
	if err := c.client.DoTimeout(req, resp, c.opts.Timeout); err != nil {
		return fmt.Errorf("posting %d stats to %s: %w", len(batch), c.target, err)
	}
	code := resp.StatusCode()
	if code == fasthttp.StatusUnauthorized {
		c.token.expire() // rotated under us: read it again next time
	}
	if code < 200 || code > 299 {
		return fmt.Errorf("posting %d stats to %s: %w %d: %.200s", len(batch), c.target, errStatus, code, resp.Body())
	}
	return nil
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
