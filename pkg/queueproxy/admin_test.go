package queueproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/stats"
)

func TestAdminEndpoints(t *testing.T) {
	r := newRig(t, testConfig(t, func(c *Config) {
		c.Names.Revision = "default/hello-00001"
		if err := c.resolveNames(); err != nil {
			t.Fatal(err)
		}
	}), startApp(t, testApp))
	h := r.q.adminHandler(r.q.proxy.metrics)
	get := func(path string, header ...string) (int, string, string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		body, _ := io.ReadAll(w.Body)
		return w.Code, w.Header().Get("Content-Type"), string(body)
	}

	// Before the first report: an empty stat with the pod name.
	code, ctype, body := get("/stats")
	var st stats.Stat
	if err := st.UnmarshalBinary([]byte(body)); err != nil || code != 200 || ctype != stats.ContentType {
		t.Fatalf("/stats = %d %q, decode error %v", code, ctype, err)
	}
	want := stats.Stat{Source: stats.SourceQueueProxy, PodName: "test-pod", Revision: "default/hello-00001"}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("first /stats (-want +got):\n%s", diff)
	}

	r.do(t, nil)
	r.do(t, func(req *fasthttp.Request) { req.Header.Set(stats.ProxyHeaderName, testMarker) })
	r.q.reporter.report(time.Now())
	_, _, body = get("/stats")
	if err := st.UnmarshalBinary([]byte(body)); err != nil || st.RequestCount != 2 || st.ProxiedRequestCount != 1 {
		t.Errorf("/stats after 2 requests = %+v, %v; want 2 requests, 1 proxied", st, err)
	}

	_, _, metrics := get("/metrics")
	for _, want := range []string{`ebb_queue_requests_total{namespace="default",revision="hello-00001"} 2`,
		`ebb_queue_proxied_requests_total{namespace="default",revision="hello-00001"} 1`,
		`ebb_queue_request_duration_seconds_count{code_class="2xx",namespace="default",revision="hello-00001"} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	tests := []struct {
		name             string
		app, draining    bool
		header           []string
		wantCode         int
		wantBodyContains string
	}{
		{name: "ready", app: true, wantCode: 200, wantBodyContains: "ok"},
		{name: "probe header", app: true, header: []string{stats.ProbeHeaderName, stats.ProbeHeaderValue}, wantCode: 200, wantBodyContains: "queue"},
		{name: "app not ready", wantCode: 503, wantBodyContains: "app not ready"},
		{name: "draining", app: true, draining: true, wantCode: 503, wantBodyContains: "draining"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.q.ready.app.Store(tt.app)
			r.q.ready.draining.Store(tt.draining)
			code, _, body := get("/healthz", tt.header...)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBodyContains) {
				t.Errorf("/healthz = %d %q, want %d containing %q", code, body, tt.wantCode, tt.wantBodyContains)
			}
		})
	}
}
