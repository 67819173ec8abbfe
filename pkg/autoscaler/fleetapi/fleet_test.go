package fleetapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
)

const prefix = "ebb-autoscaler"

// TestGate: a bucket's reports go through while it is open; others, and
// a bucket of another count, are refused with 421 and counted; a report
// naming no bucket goes through; Close waits for the reports being taken.
func TestGate(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := NewGate(prefix, 10, reg)
	release := make(chan struct{})
	var took atomic.Int32
	h := g.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") != "" {
			<-release
		}
		took.Add(1)
	}))
	post := func(query string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/stats?"+query, nil))
		return rec.Code
	}
	b3 := bucketParam + "=" + bucket.Name(prefix, 3, 10)
	g.Open(3)
	for _, tc := range []struct {
		query string
		want  int
	}{
		{b3, 200},
		{bucketParam + "=" + bucket.Name(prefix, 4, 10), 421},
		{bucketParam + "=" + bucket.Name(prefix, 3, 20), 421},
		{bucketParam + "=nonsense", 421},
		{"", 200},
	} {
		if got := post(tc.query); got != tc.want {
			t.Errorf("POST ?%s: %d, want %d", tc.query, got, tc.want)
		}
	}
	if n := testutil.ToFloat64(g.misdirected); n != 3 {
		t.Errorf("%v refusals counted, want 3", n)
	}
	done := make(chan struct{})
	go func() { post(b3 + "&slow=1"); close(done) }()
	for took.Load() == 2 && !busy(g, 3) {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { g.Close(context.Background(), 3); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a report of the bucket is being taken")
	case <-time.After(50 * time.Millisecond):
	}
	if got := post(b3); got != 421 {
		t.Errorf("a report while the bucket closes: %d, want 421", got)
	}
	close(release)
	<-closed
	<-done
}

func busy(g *Gate, i int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.busy[i] > 0
}

// fakeOwners maps buckets to replicas' API addresses; self is "".
type fakeOwners struct {
	n     int
	owner map[int]string // "" self; missing: changing hands
	peers []string
}

func (f fakeOwners) Count() int { return f.n }
func (f fakeOwners) Owner(i int) (string, bool, bool) {
	a, ok := f.owner[i]
	return a, ok && a == "", ok
}
func (f fakeOwners) Peers() []string { return f.peers }

// replica is a fake autoscaler API: its revisions, and a stream of two
// updates listing them.
func replica(name string, revs ...string) http.Handler {
	var list []map[string]string
	for _, r := range revs {
		ns, n, _ := strings.Cut(r, "/")
		list = append(list, map[string]string{"namespace": ns, "name": n, "by": name})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /revisions", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(list) })
	mux.HandleFunc("GET /revisions/{ns}/{name}/decisions", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s answers for %s/%s (forwarded: %q)", name, r.PathValue("ns"), r.PathValue("name"), r.Header.Get(ForwardedHeader))
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 2 {
			data, _ := json.Marshal(map[string]any{"revisions": list, "selected": r.URL.Query().Get("revision"), "by": name})
			fmt.Fprintf(w, "event: update\ndata: %s\n\n", data)
			w.(http.Flusher).Flush()
		}
	})
	return mux
}

// revIn is a revision name in default whose bucket of 10 is i.
func revIn(i int) string {
	for k := 0; ; k++ {
		if name := fmt.Sprint("rev-", k); bucket.Of("default/"+name, 10) == i {
			return "default/" + name
		}
	}
}

func TestAPI(t *testing.T) {
	peer := httptest.NewServer(replica("peer", revIn(1), "aaa/first"))
	defer peer.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	downAddr := strings.TrimPrefix(down.URL, "http://")
	down.Close()
	peerAddr := strings.TrimPrefix(peer.URL, "http://")
	owners := fakeOwners{n: 10, owner: map[int]string{0: "", 1: peerAddr}, peers: []string{peerAddr, downAddr}}
	api := httptest.NewServer(API(APIOptions{Local: replica("self", revIn(0)), Owners: owners}))
	defer api.Close()
	get := func(path string) (int, http.Header, string) {
		resp, err := http.Get(api.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(body)
	}

	code, h, body := get("/revisions")
	var list []map[string]string
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != 200 {
		t.Fatalf("GET /revisions: %d %s (%v)", code, body, err)
	}
	var got []string
	for _, r := range list {
		got = append(got, r["namespace"]+"/"+r["name"]+" by "+r["by"])
	}
	want := []string{"aaa/first by peer", revIn(0) + " by self", revIn(1) + " by peer"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the fleet's list (-want +got):\n%s", diff)
	}
	if p := h.Get(PartialHeader); !strings.Contains(p, downAddr) {
		t.Errorf("%s: %q, want it to name the replica that did not answer", PartialHeader, p)
	}
	if _, _, body := get("/revisions?scope=local"); strings.Contains(body, "peer") {
		t.Errorf("GET /revisions?scope=local: %s; want this replica's alone", body)
	}

	for _, tc := range []struct {
		rev, want string
		code      int
	}{
		{revIn(0), "self answers", 200},
		{revIn(1), `peer answers for ` + revIn(1) + ` (forwarded: "1")`, 200},
		{revIn(2), "changing hands", 503},
	} {
		code, _, body := get("/revisions/" + tc.rev + "/decisions")
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("decisions of %s: %d %q, want %d %q", tc.rev, code, body, tc.code, tc.want)
		}
	}

	for rev, by := range map[string]string{revIn(1): "peer", revIn(0): "self"} {
		streamOf(t, api.URL+"/events?revision="+rev, by, 3)
	}
}

// streamOf reads a dashboard stream: two updates, each from the replica
// by, each listing n revisions.
func streamOf(t *testing.T, url, by string, n int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	updates := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var u struct {
			By        string
			Revisions []map[string]string
		}
		if err := json.Unmarshal([]byte(data), &u); err != nil {
			t.Fatal(err)
		}
		updates++
		if u.By != by || len(u.Revisions) != n {
			t.Errorf("update %d from %s listing %d revisions; want the owner's (%s) stream listing the fleet's %d", updates, u.By, len(u.Revisions), by, n)
		}
	}
	if updates != 2 {
		t.Errorf("%d updates relayed from %s, want 2", updates, by)
	}
}
