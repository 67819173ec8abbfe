package autoscaler

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSeriesAndEvents(t *testing.T) {
	a, r, p, s := newTestAutoscaler(t, nil, "")
	p.setPods(hello, 2)
	s.set(70, 10)
	for sec := t0; sec <= t0+7; sec++ { // hello ticks on odd seconds
		r.second(context.Background(), sec)
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	var pts []point
	getJSON(t, srv.URL+"/revisions/default/hello/series", http.StatusOK, &pts)
	if len(pts) != 4 || pts[0].Time != t0+1 || pts[3].Desired != 2 || pts[3].Target != 70 {
		t.Errorf("series %+v: want the 4 decisions t0+1..t0+7, oldest first", pts)
	}
	getJSON(t, srv.URL+"/revisions/default/hello/series?since="+itoa(t0+3), http.StatusOK, &pts)
	if len(pts) != 2 {
		t.Errorf("series since t0+2: %d points, want 2", len(pts))
	}
	getJSON(t, srv.URL+"/revisions/default/nope/series", http.StatusNotFound, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events?revision=default/hello", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var u update
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatal(err)
		}
		if len(u.Revisions) != 1 || len(u.Points) != 4 || len(u.Decisions) == 0 || u.Selected != "default/hello" {
			t.Errorf("first update: %d revisions, %d points, %d decisions", len(u.Revisions), len(u.Points), len(u.Decisions))
		}
		return
	}
	t.Fatal("no event received")
}

func TestSeriesStoreIsBounded(t *testing.T) {
	st := newSeriesStore(2)
	for i := range 5 {
		st.points(RevisionKey{"ns", itoa(int64(i))}, 0)
	}
	if n := st.cache.Len(); n != 2 {
		t.Errorf("%d charts kept, want 2", n)
	}
	var s series
	for i := range seriesLength + 10 {
		s.add(point{Time: int64(i)})
	}
	pts := s.since(-1)
	if len(pts) != seriesLength || pts[0].Time != 10 || pts[len(pts)-1].Time != seriesLength+9 {
		t.Errorf("ring: %d points from %d to %d", len(pts), pts[0].Time, pts[len(pts)-1].Time)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// TestEventStreamsCapped: past MaxEventStreams, a new /events stream is
// answered 503 with a message; when one closes, a new one is served.
func TestEventStreamsCapped(t *testing.T) {
	a := New(Options{Platform: &fakePlatform{pods: map[RevisionKey][]Pod{}}, Scraper: &fakeScraper{}, MaxEventStreams: 1})
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return resp, cancel
	}
	first, stop := open()
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first stream: status %d", first.StatusCode)
	}
	// The first event is written once the stream holds its slot.
	if line, err := bufio.NewReader(first.Body).ReadString('\n'); err != nil || line != "event: update\n" {
		t.Fatalf("first stream: %q %v", line, err)
	}
	second, stop2 := open()
	body := make([]byte, 200)
	n, _ := second.Body.Read(body)
	second.Body.Close()
	stop2()
	if second.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body[:n]), "too many dashboards") {
		t.Errorf("second stream: status %d %q, want 503 naming the limit", second.StatusCode, body[:n])
	}
	first.Body.Close()
	stop()
	// The slot is released when the handler returns; wait for it through
	// the channel rather than a sleep.
	select {
	case a.streams <- struct{}{}:
		<-a.streams
	case <-time.After(5 * time.Second):
		t.Fatal("the closed stream's slot was not released")
	}
}
