package proxycore

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"
)

// The probes of the data path, both ends, once for both proxies and both
// protocols: the activator asks a replica's queue-proxy whether it is
// ready (Knative's K-Network-Probe: queue, answered 200 "queue"), the
// queue-proxy asks its app (READINESS_PROBE_PATH, 2xx or 3xx), over
// HTTP/1.1 or h2c; the proxies answer probes (ProbeAnswer).

// maxProbeBody is the most of a probe's answer read.
const maxProbeBody = 4 << 10

// Probe is one HTTP readiness probe: GET Path, with Field set when it
// names one, which passes when Ready says so of the answer.
type Probe struct {
	Path      string
	Field     [2]string // name and value of a field to send; "": none
	UserAgent string
	Timeout   time.Duration // bounds one probe. Must be > 0.
	// Ready judges the answer (its body up to 4 KiB).
	Ready func(status int, body []byte) bool
}

// Do probes the upstream of hc over HTTP/1.1.
func (p *Probe) Do(hc *fasthttp.HostClient) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + hc.Addr + p.Path)
	p.setFields(func(k, v string) { req.Header.Set(k, v) })
	if err := hc.DoTimeout(req, resp, p.Timeout); err != nil {
		return err
	}
	return p.judge(resp.StatusCode(), resp.Body())
}

// Get probes addr through tr (net/http's client side: HTTP/1.1, or h2c for
// an app that speaks nothing else), bounded by ctx and the probe's
// Timeout.
func (p *Probe) Get(ctx context.Context, tr http.RoundTripper, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+p.Path, nil)
	if err != nil {
		return err
	}
	p.setFields(req.Header.Set)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	return p.judge(resp.StatusCode, body)
}

func (p *Probe) setFields(set func(k, v string)) {
	if p.UserAgent != "" {
		set("User-Agent", p.UserAgent)
	}
	if p.Field[0] != "" {
		set(p.Field[0], p.Field[1])
	}
}

func (p *Probe) judge(status int, body []byte) error {
	if len(body) > maxProbeBody {
		body = body[:maxProbeBody]
	}
	if !p.Ready(status, body) {
		return fmt.Errorf("GET %s: status %d, not ready", p.Path, status)
	}
	return nil
}

// QueueProbe is the probe of a replica's queue-proxy: GET /healthz with
// K-Network-Probe: queue, ready on 200 with the body "queue" (answered by
// the queue-proxy itself, without reaching the app). The activator and
// both platforms send it, each with its own User-Agent.
func QueueProbe(userAgent string, timeout time.Duration) Probe {
	return Probe{Path: "/healthz", Field: [2]string{queueProbeField, queueProbeValue},
		UserAgent: userAgent, Timeout: timeout, Ready: queueReady}
}

// The queue probe's field and answer: stats.ProbeHeaderName and
// stats.ProbeHeaderValue, which the queue-proxy answers (the proxy core
// keeps to the data path's mechanics and imports no Ebb policy package;
// TestQueueProbeFields holds the two equal).
const (
	queueProbeField = "K-Network-Probe"
	queueProbeValue = "queue"
)

func queueReady(status int, body []byte) bool {
	return status == http.StatusOK && string(body) == queueProbeValue
}

// Successful is the Ready of a probe that passes on 2xx and 3xx (a
// kubelet's httpGet probe).
func Successful(status int, _ []byte) bool { return status >= 200 && status < 400 }

// ProbeAnswer is a proxy's answer to a probe: a status and a short text
// body, written the same on both protocols.
type ProbeAnswer struct {
	Status int
	Body   []byte
}

// Write answers a probe on HTTP/1.1. The request's body, if any, is
// settled first (DiscardBody).
func (a ProbeAnswer) Write(ctx *fasthttp.RequestCtx) {
	DiscardBody(ctx)
	ctx.Response.SetStatusCode(a.Status)
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.Response.SetBodyRaw(a.Body)
}

// WriteHTTP answers a probe on HTTP/2 (or net/http's HTTP/1.1).
func (a ProbeAnswer) WriteHTTP(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body)
}
