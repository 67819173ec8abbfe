package proxycore

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/stats"
)

// TestQueueProbeFields: the queue probe sends the field the queue-proxy
// answers and wants its answer.
func TestQueueProbeFields(t *testing.T) {
	if queueProbeField != stats.ProbeHeaderName || queueProbeValue != stats.ProbeHeaderValue {
		t.Fatalf("queue probe %q: %q, the queue-proxy answers %q: %q",
			queueProbeField, queueProbeValue, stats.ProbeHeaderName, stats.ProbeHeaderValue)
	}
}

// TestQueueProbeGet: the probe passes on a queue-proxy's answer only, and
// sends its field and User-Agent.
func TestQueueProbeGet(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	answer := "queue"
	var gotUA string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUA = r.UserAgent()
		if r.Header.Get(stats.ProbeHeaderName) != stats.ProbeHeaderValue {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(answer))
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	probe := QueueProbe("probe-test", time.Second)
	if err := probe.Get(context.Background(), tr, ln.Addr().String()); err != nil {
		t.Fatalf("a queue-proxy's answer: %v", err)
	}
	if gotUA != "probe-test" {
		t.Errorf("User-Agent %q, want probe-test", gotUA)
	}
	answer = "hello from the app"
	if err := probe.Get(context.Background(), tr, ln.Addr().String()); err == nil {
		t.Error("an app's answer passed the queue probe")
	}
}
