package autoscaler

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"ebb.dev/ebb/pkg/stats"
)

func TestAPI(t *testing.T) {
	a, r, p, s := newTestAutoscaler(t, nil, "")
	p.setPods(hello, 2)
	s.set(70, 10)
	for sec := t0; sec <= t0+4; sec++ {
		r.second(context.Background(), sec)
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	var list []Status
	getJSON(t, srv.URL+"/revisions", http.StatusOK, &list)
	if len(list) != 1 || list[0].Name != "hello" || list[0].Desired != 2 {
		t.Errorf("GET /revisions = %+v", list)
	}
	var decs DecisionsResponse
	getJSON(t, srv.URL+"/revisions/default/hello/decisions?limit=2", http.StatusOK, &decs)
	if len(decs.Decisions) != 2 || len(decs.Decisions[0].Reasons) == 0 || !decs.Decisions[0].Time.After(decs.Decisions[1].Time) {
		t.Errorf("decisions %+v: want the 2 newest first, with reasons", decs.Decisions)
	}
	getJSON(t, srv.URL+"/revisions/default/nope/decisions", http.StatusNotFound, nil)
	getJSON(t, srv.URL+"/revisions/default/hello/decisions?limit=x", http.StatusBadRequest, nil)

	batch, _ := stats.AppendBatch(nil, []stats.Stat{
		{Source: stats.SourceActivator, Revision: "default/hello", AverageConcurrency: 2, RequestCount: 3},
		{Source: stats.SourceActivator, Revision: "default/unknown", AverageConcurrency: 1},
	})
	resp := postStats(t, srv.URL, tokenActA, stats.BatchContentType, batch)
	var sr statsResponse
	json.NewDecoder(resp.Body).Decode(&sr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || sr.Accepted != 1 || len(sr.Rejected) != 1 || !strings.Contains(sr.Rejected[0], "unknown revision") {
		t.Errorf("POST /v1/stats: %d %+v", resp.StatusCode, sr)
	}
	if got := len(r.takePending()); got != 1 {
		t.Errorf("%d reports pending, want 1", got)
	}
	resp = postStats(t, srv.URL, tokenActA, stats.BatchContentType, []byte("garbage"))
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("malformed report: status %d, want 400", resp.StatusCode)
	}
}

// postStats posts a body to /v1/stats with a bearer token ("" for none).
func postStats(t *testing.T, base, token, contentType string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/stats", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func getJSON(t *testing.T, url string, code int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != code {
		t.Fatalf("GET %s: status %d, want %d", url, resp.StatusCode, code)
	}
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
}

// TestHugeLoadKeepsAnswersEncodable: a scrape claiming 1e308 requests in
// flight (past the wire's bounds, as a broken scraper could) never makes
// the decisions, the chart or the status unencodable: the decider refuses
// the seconds and says so.
func TestHugeLoadKeepsAnswersEncodable(t *testing.T) {
	a, r, p, s := newTestAutoscaler(t, nil, "")
	p.setPods(hello, 2)
	s.set(1e308, 1e308)
	for sec := t0; sec <= t0+4; sec++ {
		r.second(context.Background(), sec)
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	var decs DecisionsResponse
	getJSON(t, srv.URL+"/revisions/default/hello/decisions", http.StatusOK, &decs)
	refused := false
	for _, d := range decs.Decisions {
		for _, r := range d.Reasons {
			refused = refused || r.Code == "MetricRefused"
			if strings.Contains(r.Message, "Inf") || strings.Contains(r.Message, "2147483647") {
				t.Errorf("reason %s: %q", r.Code, r.Message)
			}
		}
	}
	if !refused || decs.Status.Desired > 2 {
		t.Errorf("decisions %+v: want MetricRefused and no scale-up from refused seconds", decs.Decisions)
	}
	var pts []point
	getJSON(t, srv.URL+"/revisions/default/hello/series", http.StatusOK, &pts)
	var list []Status
	getJSON(t, srv.URL+"/revisions", http.StatusOK, &list)
}
