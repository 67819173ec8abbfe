package queueproxy

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/proxy/h2c"
	"ebb.dev/ebb/pkg/proxy/proxycore"
)

// startupProbeInterval is how often the app is probed until it first
// answers: aggressive, so a cold start is ready as soon as the app is.
const startupProbeInterval = 50 * time.Millisecond

// readiness is the queue-proxy's readiness: the app answered its probes and
// no drain has begun. Written by the Prober, by the drain, and by the
// proxy when the app refuses a connection (AppRefused); read by every
// probe answer.
type readiness struct {
	app      atomic.Bool
	draining atomic.Bool
	// refused (capacity 1) tells the Prober that the proxy saw the app
	// refuse a connection while ready: it probes again at once, and at
	// the startup interval until the app answers. nil: no Prober listens.
	refused chan struct{}
}

// newReadiness is a Readiness whose AppRefused reaches a Prober.
func newReadiness() *readiness { return &readiness{refused: make(chan struct{}, 1)} }

// appRefused records that no connection to the app could be made: the
// app is not ready from now on (a crashed or restarting app refuses
// every request; each would otherwise fail until the next probe period
// ends), until the Prober sees it answer again. It never blocks, and
// does nothing when the app was not ready already.
func (r *readiness) appRefused() {
	if !r.app.CompareAndSwap(true, false) {
		return
	}
	select {
	case r.refused <- struct{}{}:
	default: // a nudge is pending already (nil: nobody listens)
	}
}

// ready reports whether the queue-proxy should receive traffic.
func (r *readiness) ready() bool { return r.app.Load() && !r.draining.Load() }

// appReady reports whether the app answered its probes (and has not
// refused a connection since), whether or not a drain has begun: what the
// kubelet's probe is answered from. A draining pod is terminating, and
// Kubernetes already takes terminating pods out of their Services'
// endpoints (and the activator out of rotation), so failing the kubelet's
// probe during the drain would only fill the Events with Warnings
// (Unhealthy) about a pod doing what it should.
func (r *readiness) appReady() bool { return r.app.Load() }

// Draining reports whether a drain has begun.
func (r *readiness) Draining() bool { return r.draining.Load() }

// drain fails readiness for good.
func (r *readiness) drain() { r.draining.Store(true) }

// probeState is the pure core of the prober: one success makes the app
// ready; threshold consecutive failures make it not ready.
type probeState struct {
	ready     bool
	fails     int
	threshold int
}

// refused records that the proxy saw the app refuse a connection: not
// ready, until a probe succeeds.
func (s *probeState) refused() { s.ready, s.fails = false, 0 }

// observe records one probe result and reports whether readiness changed.
func (s *probeState) observe(ok bool) bool {
	if ok {
		s.fails = 0
		if !s.ready {
			s.ready = true
			return true
		}
		return false
	}
	s.fails++
	if s.ready && s.fails >= s.threshold {
		s.ready = false
		return true
	}
	return false
}

// prober probes the app and keeps Readiness.app up to date.
type prober struct {
	probe  func(ctx context.Context) error
	ready  *readiness
	period time.Duration
	state  probeState // owned by Run's goroutine
	log    *zap.Logger
}

// newProber probes addr by TCP connect, or by GET path when path is set
// (as HTTP/2 cleartext with QUEUE_UPSTREAM_PROTOCOL=h2c).
func newProber(addr string, c Config, ready *readiness, log *zap.Logger) *prober {
	probe := tcpProbe(addr, c.ProbeTimeout)
	switch {
	case c.ProbePath != "" && c.UpstreamProtocol == config.UpstreamH2C:
		probe = h2cProbe(addr, c.ProbePath, c.ProbeTimeout) // the app may speak nothing else
	case c.ProbePath != "":
		probe = httpProbe(addr, c.ProbePath, c.ProbeTimeout)
	}
	return &prober{probe: probe, ready: ready, period: c.ProbePeriod,
		state: probeState{threshold: c.ProbeFailureThreshold}, log: log}
}

// run probes every 50 ms until the first success, then every period, until
// ctx ends. When the proxy saw the app refuse a connection
// (Readiness.AppRefused) it probes at once, then every 50 ms again until
// the app answers.
func (p *prober) run(ctx context.Context) {
	t := time.NewTicker(startupProbeInterval)
	defer t.Stop()
	for started := false; ; {
		err := p.probe(ctx)
		if p.state.observe(err == nil) {
			p.ready.app.Store(p.state.ready)
			if p.state.ready {
				p.log.Info("app ready")
			} else {
				p.log.Warn("app not ready", zap.Int("failures", p.state.fails), zap.Error(err))
			}
		}
		if p.state.ready && !started {
			started = true
			t.Reset(p.period)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.ready.refused:
			p.state.refused()
			p.ready.app.Store(false) // a probe that succeeded meanwhile may have set it again
			p.log.Warn("the app refused a connection: not ready until it answers a probe",
				zap.Duration("probeInterval", startupProbeInterval))
			started = false
			t.Reset(startupProbeInterval)
		}
	}
}

func tcpProbe(addr string, timeout time.Duration) func(context.Context) error {
	d := net.Dialer{Timeout: timeout}
	return func(ctx context.Context) error {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// appProbe is the probe of the app's READINESS_PROBE_PATH: GET, 2xx or
// 3xx is ready (proxycore's probe client, the activator's too).
func appProbe(path string, timeout time.Duration) *proxycore.Probe {
	return &proxycore.Probe{Path: path, UserAgent: "ebb-queue-proxy-probe", Timeout: timeout, Ready: proxycore.Successful}
}

func httpProbe(addr, path string, timeout time.Duration) func(context.Context) error {
	hc := &fasthttp.HostClient{Addr: addr, Name: "ebb-queue-proxy-probe", MaxConns: 1}
	probe := appProbe(path, timeout)
	return func(context.Context) error { return probe.Do(hc) }
}

// h2cProbe is httpProbe over HTTP/2 cleartext (prior knowledge).
func h2cProbe(addr, path string, timeout time.Duration) func(context.Context) error {
	tr := h2c.NewTransport(h2c.TransportOptions{DialTimeout: timeout, IdleConnTimeout: 4 * time.Second})
	probe := appProbe(path, timeout)
	return func(ctx context.Context) error { return probe.Get(ctx, tr, addr) }
}
