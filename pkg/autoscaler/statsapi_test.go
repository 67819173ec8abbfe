package autoscaler

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/stats"
)

// toZero drives a revision with one idle pod until its recommendation is
// 0, then takes the pod away: the next traffic is a cold start.
func toZero(t *testing.T, r *revision, p *fakePlatform) {
	t.Helper()
	p.setPods(r.key, 1)
	for sec := t0; sec <= t0+2; sec++ {
		r.second(context.Background(), sec)
	}
	p.setPods(r.key, 0)
	if !r.atZero.Load() {
		t.Fatalf("%s: recommendation %d, want 0", r.key, r.currentStatus().Recommended)
	}
}

func batchOf(t *testing.T, ss ...stats.Stat) []byte {
	t.Helper()
	b, err := stats.AppendBatch(nil, ss)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// load is an activator's report of traffic for a revision: a poke (period
// 0) or a one-second window.
func load(rev string, conc float64, period time.Duration) stats.Stat {
	return stats.Stat{Source: stats.SourceActivator, PodName: "claimed-pod", Revision: rev, Period: period,
		AverageConcurrency: conc, RequestCount: uint64(conc)}
}

// TestStatsRefusedChangeNothing: a report without valid credentials, of
// the wrong media type, or to a foreign Host is refused with a status that
// says why, and neither queues a report nor pokes the revision.
func TestStatsRefusedChangeNothing(t *testing.T) {
	a, r, p, _ := newTestAutoscaler(t, nil, "")
	toZero(t, r, p)
	a.gate.localOnly = true
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	forged := batchOf(t, load("default/hello", 1000, 0))
	tests := []struct {
		name, token, contentType, host string
		code                           int
		body                           string
	}{
		{name: "no credentials", code: 401, body: "no credentials"},
		{name: "unknown token", token: "forged", code: 401, body: "invalid credentials"},
		{name: "not an activator", token: tokenApp, code: 403, body: "only activators may post stats: " + forbiddenName},
		{name: "cannot check", token: tokenDown, code: 503, body: "cannot check credentials now"},
		{name: "text/plain from a web page", token: tokenActA, contentType: "text/plain", code: 415, body: "takes " + stats.BatchContentType + " only"},
		{name: "form from a web page", contentType: "application/x-www-form-urlencoded", code: 415, body: "Content-Type"},
		{name: "foreign Host", token: tokenActA, host: "evil.example:9091", code: 421, body: `Host "evil.example:9091" is not this machine`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := tt.contentType
			if ct == "" {
				ct = stats.BatchContentType
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/stats", strings.NewReader(string(forged)))
			req.Header.Set("Content-Type", ct)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.code || !strings.Contains(string(body), tt.body) {
				t.Errorf("status %d %q, want %d containing %q", resp.StatusCode, body, tt.code, tt.body)
			}
			if tt.code == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
			if got := r.takePending(); len(got) != 0 {
				t.Errorf("refused report queued: %+v", got)
			}
			if poked(r) {
				t.Errorf("refused report poked the revision")
			}
		})
	}
	// The same report from an activator counts: the revision wakes.
	resp := postStats(t, srv.URL, tokenActA, stats.BatchContentType, forged)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(r.takePending()) != 1 {
		t.Errorf("activator's report: status %d, want 200 and one report queued", resp.StatusCode)
	}
}

// TestInfiniteStatRefused: a stat of 1e308 requests in flight is refused
// on the wire with its field, value and bound named, and queues nothing.
func TestInfiniteStatRefused(t *testing.T) {
	a, r, _, _ := newTestAutoscaler(t, nil, "")
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	body := batchOf(t, load("default/hello", 1, time.Second))
	binary.BigEndian.PutUint64(body[2+28:], math.Float64bits(1e308)) // offset 28: average concurrency (pkg/stats doc.go)
	resp := postStats(t, srv.URL, tokenActA, stats.BatchContentType, body)
	var sr statsResponse
	json.NewDecoder(resp.Body).Decode(&sr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || sr.Accepted != 0 || len(sr.Rejected) != 1 ||
		!strings.Contains(sr.Rejected[0], "average concurrency 1e+308 must be finite and within [0, 1e+06]") {
		t.Errorf("status %d %+v, want 400 naming the field, value and bound", resp.StatusCode, sr)
	}
	if got := r.takePending(); len(got) != 0 {
		t.Errorf("reports queued: %+v", got)
	}
}

// TestStatsBatchRefusedWhole: a report over the limit (5,000 stats of
// 4,096) or with a malformed stat after good ones answers 400 saying so,
// and nothing of it is taken.
func TestStatsBatchRefusedWhole(t *testing.T) {
	a, r, _, _ := newTestAutoscaler(t, nil, "")
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	good := load("default/hello", 1, time.Second)
	many := make([]stats.Stat, 5000)
	for i := range many {
		many[i] = good
	}
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"over the limit", batchOf(t, many...), "more than 4096 stats"},
		{"a malformed stat after good ones", append(batchOf(t, good, good), 0, 3, 'b', 'a', 'd'), "stat 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := postStats(t, srv.URL, tokenActA, stats.BatchContentType, tt.body)
			var sr statsResponse
			json.NewDecoder(resp.Body).Decode(&sr)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || sr.Accepted != 0 || len(sr.Rejected) != 1 ||
				!strings.Contains(sr.Rejected[0], tt.want) || !strings.Contains(sr.Rejected[0], "nothing of it taken") {
				t.Errorf("status %d %+v; want 400 saying %q and that nothing was taken", resp.StatusCode, sr, tt.want)
			}
			if got := r.takePending(); len(got) != 0 {
				t.Errorf("%d reports queued, want none", len(got))
			}
		})
	}
}

// TestStatsRatePerReporter: a reporter past its budget gets 429 and
// changes nothing; another reporter is not affected; the budget refills
// with the autoscaler's clock.
func TestStatsRatePerReporter(t *testing.T) {
	a, r, _, _ := newTestAutoscaler(t, nil, "")
	a.gate.rate, a.gate.burst = 5, 10
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	ten := make([]stats.Stat, 10)
	for i := range ten {
		ten[i] = load("default/hello", 1, time.Second)
	}
	post := func(token string, ss ...stats.Stat) int {
		resp := postStats(t, srv.URL, token, stats.BatchContentType, batchOf(t, ss...))
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(tokenActA, ten...); code != http.StatusOK {
		t.Fatalf("first 10 stats: status %d, want 200", code)
	}
	r.takePending()
	if code := post(tokenActA, ten[0]); code != http.StatusTooManyRequests {
		t.Errorf("11th stat within the second: status %d, want 429", code)
	}
	if got := r.takePending(); len(got) != 0 {
		t.Errorf("refused report queued: %+v", got)
	}
	if code := post(tokenActB, ten...); code != http.StatusOK {
		t.Errorf("another activator: status %d, want 200", code)
	}
	a.deps.clock.(*fakeClock).advance(time.Second)
	if code := post(tokenActA, ten[:5]...); code != http.StatusOK {
		t.Errorf("after a second: status %d, want 200 (5 stats refilled)", code)
	}
}

// TestFloodDoesNotDelayPoke is the cold start under a flood: one
// authenticated activator floods zero-load reports for every revision
// (under many pod names) until it is throttled; another activator's poke
// for a revision at zero still reaches that revision's decider (its poke
// channel, then a decision for one pod), for the flooded revision as well.
func TestFloodDoesNotDelayPoke(t *testing.T) {
	a, hr, p, _ := newTestAutoscaler(t, nil, "")
	other := RevisionKey{Namespace: "default", Name: "other"}
	if err := a.Upsert(other, nil); err != nil {
		t.Fatal(err)
	}
	or := a.revisions[other]
	toZero(t, hr, p)
	toZero(t, or, p)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	flood := make([]stats.Stat, 0, 2*maxPendingReporters)
	for i := range maxPendingReporters {
		for _, rev := range []string{"default/hello", "default/other"} {
			s := load(rev, 0, time.Second)
			s.PodName = "pod-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
			flood = append(flood, s)
		}
	}
	throttled, taken := false, 0
	for range 100 {
		resp := postStats(t, srv.URL, tokenActA, stats.BatchContentType, batchOf(t, flood...))
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			throttled = true
			break
		}
		taken += len(flood)
	}
	slots := func(r *revision) int { r.mu.Lock(); defer r.mu.Unlock(); return r.inbox.Len() }
	t.Logf("flood: %d stats taken in the second before 429; pending slots: hello %d, other %d", taken, slots(hr), slots(or))
	if !throttled {
		t.Fatalf("100 floods of %d stats within one second were all taken", len(flood))
	}
	resp := postStats(t, srv.URL, tokenActB, stats.BatchContentType,
		batchOf(t, load("default/other", 1, 0), load("default/hello", 1, 0)))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the poke: status %d, want 200", resp.StatusCode)
	}
	for _, r := range []*revision{or, hr} {
		if !poked(r) {
			t.Fatalf("%s: no poke after the flood", r.key)
		}
		r.second(context.Background(), t0+3)
		if got := r.currentStatus(); got.Recommended != 1 || got.Desired != 1 {
			t.Errorf("%s after the poke: recommended %d desired %d, want 1 and 1", r.key, got.Recommended, got.Desired)
		}
	}
}

func TestLocalHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:9091": true, "[::1]:9091": true, "localhost:9091": true, "LocalHost": true,
		"hello.localhost": true, "10.1.2.3": true, "evil.example:9091": false, "localhost.evil.example": false, "": false,
	} {
		if got := localHost(host); got != want {
			t.Errorf("localHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// refuseAll is a StatsGate that holds no bucket.
type refuseAll struct{ asked *int }

func (g refuseAll) Admit(*http.Request) (func(), string) {
	*g.asked++
	return nil, "bucket not held here"
}

// TestStatsAuthenticatedBeforeGate (issue 33): the bucket check comes
// after the credentials, so an unauthenticated client gets 401 whatever
// the bucket, and learns nothing of what this replica holds; an
// activator gets 421 for a bucket not held here.
func TestStatsAuthenticatedBeforeGate(t *testing.T) {
	a, _, _, _ := newTestAutoscaler(t, nil, "")
	asked := 0
	a.SetStatsGate(refuseAll{&asked})
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	body := batchOf(t, load("default/hello", 1, 0))
	for _, tok := range []string{"", "forged"} {
		resp := postStats(t, srv.URL, tok, stats.BatchContentType, body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: %d, want 401 before any bucket check", tok, resp.StatusCode)
		}
	}
	if asked != 0 {
		t.Errorf("the gate was asked %d times for unauthenticated reports", asked)
	}
	resp := postStats(t, srv.URL, tokenActA, stats.BatchContentType, body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || asked != 1 {
		t.Errorf("an activator's report for a bucket not held: %d (gate asked %d), want 421", resp.StatusCode, asked)
	}
}
