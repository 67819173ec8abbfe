package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/stats"
)

func TestScrape(t *testing.T) {
	want := stats.Stat{Source: stats.SourceQueueProxy, PodName: "p1", Period: time.Second, AverageConcurrency: 2.5, RequestCount: 9}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case stats.Path:
			b, _ := want.MarshalBinary()
			w.Write(b)
		case "/bad/stats":
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := New()
	defer c.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	got, err := c.Scrape(context.Background(), autoscaler.Pod{Name: "p1", StatsAddr: addr})
	if err != nil || got.AverageConcurrency != 2.5 || got.RequestCount != 9 {
		t.Fatalf("Scrape = %+v, %v", got, err)
	}
	if _, err := c.Scrape(context.Background(), autoscaler.Pod{Name: "p2", StatsAddr: "127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "p2") {
		t.Errorf("dead pod: err = %v, want one naming the pod", err)
	}
}
