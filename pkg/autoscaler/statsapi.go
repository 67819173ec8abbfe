package autoscaler

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"ebb.dev/ebb/pkg/stats"
)

// Defaults of the stats endpoint's per-reporter bound.
const (
	// DefaultStatsRate is how many stats one reporter may push per second:
	// an activator reports one stat per revision with traffic per period,
	// and pokes on the first request at zero.
	DefaultStatsRate = 10000
	// DefaultStatsBurst is how many stats one reporter may push at once;
	// at least maxBatchStats, so one full report always fits.
	DefaultStatsBurst = 2 * maxBatchStats
	// maxReporters bounds the reporters whose rate is tracked (least
	// recently seen forgotten first).
	maxReporters = 1024
)

// statsGate decides who may post stats, and how many. Immutable after
// newStatsGate, except limiters (safe for concurrent use).
type statsGate struct {
	auth      Authenticator // nil: every report is refused
	localOnly bool
	rate      rate.Limit
	burst     int
	limiters  *lru.Cache[string, *rate.Limiter]
}

func newStatsGate(o Options) *statsGate {
	g := &statsGate{auth: o.StatsAuth, localOnly: o.StatsLocalHostsOnly,
		rate: rate.Limit(o.StatsRate), burst: o.StatsBurst}
	if g.rate <= 0 {
		g.rate = DefaultStatsRate
	}
	if g.burst < maxBatchStats {
		g.burst = max(DefaultStatsBurst, g.burst)
	}
	var err error
	if g.limiters, err = lru.New[string, *rate.Limiter](maxReporters); err != nil {
		panic(err) // only for a size < 1
	}
	return g
}

// refusal is an answer that refuses a report before it changes anything.
type refusal struct {
	code int
	msg  string
}

// admit checks, in order of cost: the Host (when local hosts only), the
// media type, then the credentials. It returns the proven reporter.
func (g *statsGate) admit(r *http.Request) (Reporter, *refusal) {
	if g.localOnly && !localHost(r.Host) {
		return Reporter{}, &refusal{http.StatusMisdirectedRequest, fmt.Sprintf(
			"Host %q is not this machine: POST /v1/stats takes reports addressed to an IP address or localhost only "+
				"(a web page's name resolved to this machine must not post here)", r.Host)}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != stats.BatchContentType {
		return Reporter{}, &refusal{http.StatusUnsupportedMediaType, fmt.Sprintf(
			"Content-Type %q: POST /v1/stats takes %s only (pkg/stats batch)", r.Header.Get("Content-Type"), stats.BatchContentType)}
	}
	if g.auth == nil {
		return Reporter{}, &refusal{http.StatusUnauthorized, "this autoscaler takes no reports over HTTP: no authenticator is configured"}
	}
	token, ok := bearerToken(r)
	if !ok {
		return Reporter{}, &refusal{http.StatusUnauthorized,
			"no credentials: an activator sends Authorization: Bearer TOKEN (docs/kubernetes.md, \"Stats authentication\")"}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	who, err := g.auth.Authenticate(WithSource(r.Context(), host), token)
	switch {
	case errors.Is(err, ErrUnauthenticated):
		return Reporter{}, &refusal{http.StatusUnauthorized, "invalid credentials: " + err.Error()}
	case errors.Is(err, ErrNotActivator):
		return Reporter{}, &refusal{http.StatusForbidden, "only activators may post stats: " + err.Error()}
	case err != nil:
		return Reporter{}, &refusal{http.StatusServiceUnavailable, "cannot check credentials now, try again: " + err.Error()}
	}
	return who, nil
}

// allow takes n stats from the reporter's budget at the autoscaler's now.
func (a *Autoscaler) allow(who Reporter, n int) bool {
	g := a.gate
	l, ok := g.limiters.Get(who.key())
	if !ok {
		l = rate.NewLimiter(g.rate, g.burst)
		if prev, found, _ := g.limiters.PeekOrAdd(who.key(), l); found {
			l = prev
		}
	}
	return l.AllowN(a.deps.clock.Now(), max(n, 1))
}

// localHost reports whether a Host header names this machine by address
// or as localhost (with or without a port).
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if net.ParseIP(host) != nil {
		return true
	}
	host = strings.ToLower(host)
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// statsResponse is the body of POST /v1/stats.
type statsResponse struct {
	Accepted int      `json:"accepted"`
	Rejected []string `json:"rejected,omitempty"`
}

// SetStatsGate makes every authenticated report pass g before its body is
// read (a report refused by it is answered 421). Without it, every
// authenticated report is read.
func (a *Autoscaler) SetStatsGate(g StatsGate) { a.statsGate.Store(&g) }

// serveStats takes an activator report: refused whole (400, 401, 403, 415,
// 421, 429, 503) before it changes anything, or taken stat by stat. The
// credentials are checked before the StatsGate: 401 comes before 421.
func (a *Autoscaler) serveStats(w http.ResponseWriter, r *http.Request) {
	who, no := a.gate.admit(r)
	if no != nil {
		if no.code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ebb-autoscaler"`)
		}
		a.deps.metrics.refused(no.code)
		a.deps.log.Debug("stats report refused", zap.Int("status", no.code), zap.String("remote", r.RemoteAddr))
		http.Error(w, no.msg, no.code)
		return
	}
	if sg := a.statsGate.Load(); sg != nil {
		done, refusal := (*sg).Admit(r)
		if refusal != "" {
			a.deps.metrics.refused(http.StatusMisdirectedRequest)
			http.Error(w, refusal, http.StatusMisdirectedRequest)
			return
		}
		defer done()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBatchBytes))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the report: %v (at most %d bytes)", err, maxBatchBytes), http.StatusRequestEntityTooLarge)
		return
	}
	ss, perr := stats.ParseBatch(body, maxBatchStats)
	if perr != nil {
		// Refused whole: a report that cannot be read to its end (more than
		// maxBatchStats stats, a malformed stat) changes nothing, so an
		// activator never sees half of it taken.
		a.deps.log.Warn("malformed activator report", zap.String("reporter", who.Name), zap.Error(perr))
		writeJSON(w, http.StatusBadRequest, statsResponse{Rejected: []string{fmt.Sprintf(
			"%v: report refused, nothing of it taken; send at most %d well-formed stats (%s) per POST", perr, maxBatchStats, stats.BatchContentType)}})
		return
	}
	if !a.allow(who, len(ss)) {
		a.deps.metrics.refused(http.StatusTooManyRequests)
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("reporter %s pushes more than %g stats per second (burst %d): report refused",
			who.Name, float64(a.gate.rate), a.gate.burst), http.StatusTooManyRequests)
		return
	}
	writeJSON(w, http.StatusOK, a.ingestFrom(who, ss))
}

// ingestFrom takes the stats of one admitted report: a reporter whose
// credentials name its pod speaks for that pod only.
func (a *Autoscaler) ingestFrom(who Reporter, ss []stats.Stat) statsResponse {
	var resp statsResponse
	for _, st := range ss {
		if st.Time.IsZero() {
			st.Time = a.deps.clock.Now()
		}
		if who.Pod != "" {
			st.PodName = who.Pod
		}
		if err := a.Ingest(st); err != nil {
			resp.Rejected = append(resp.Rejected, err.Error())
			continue
		}
		resp.Accepted++
	}
	return resp
}
