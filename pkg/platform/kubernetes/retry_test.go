package kubernetes

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/platform/kubernetes/fence"
)

// refusingServer answers the first refusals scale writes 429 with
// Retry-After: 1, as the API server's Priority and Fairness does when
// its queues are full, and the others 200; it records when each came.
type refusingServer struct {
	*httptest.Server
	refusals int

	mu  sync.Mutex
	got []time.Time
}

func newRefusingServer(t *testing.T, refusals int) *refusingServer {
	s := &refusingServer{refusals: refusals}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, time.Now())
		n := len(s.got)
		s.mu.Unlock()
		if n <= s.refusals {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *refusingServer) tries() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.got...)
}

// TestRefusedWriteRetriedThroughTheFence: a fenced scale write answered
// 429 is sent again by the writes' client after the Retry-After the API
// server asked for, not sooner, and lands; and the fence is checked
// again before that try: a bucket lost during the wait sends nothing
// more and the write fails with fence.ErrFenced (the autoscaler's next
// decision, on whichever replica holds the bucket then, writes again).
func TestRefusedWriteRetriedThroughTheFence(t *testing.T) {
	t.Run("held", func(t *testing.T) {
		srv := newRefusingServer(t, 2)
		c, err := ClientsFor((&apiServer{Server: srv.Server}).config())
		if err != nil {
			t.Fatal(err)
		}
		f := &openFence{left: 10 * time.Second}
		f.open.Store(true)
		if err := scale(fence.For(context.Background(), f, 0), c, "w-1"); err != nil {
			t.Fatalf("a write refused twice with 429, then accepted: %v", err)
		}
		tries := srv.tries()
		if len(tries) != 3 {
			t.Fatalf("%d tries, want 3 (two refused)", len(tries))
		}
		for i := 1; i < len(tries); i++ {
			if gap := tries[i].Sub(tries[i-1]); gap < 900*time.Millisecond {
				t.Errorf("try %d came %v after the refusal, want the Retry-After (1s)", i+1, gap)
			}
		}
	})
	t.Run("lost while waiting", func(t *testing.T) {
		srv := newRefusingServer(t, 1)
		c, err := ClientsFor((&apiServer{Server: srv.Server}).config())
		if err != nil {
			t.Fatal(err)
		}
		f := &openFence{left: 10 * time.Second}
		f.open.Store(true)
		time.AfterFunc(300*time.Millisecond, func() { f.open.Store(false) }) // during the Retry-After
		err = scale(fence.For(context.Background(), f, 0), c, "w-1")
		if !errors.Is(err, fence.ErrFenced) {
			t.Errorf("a write whose bucket was lost while it waited to be sent again: %v, want ErrFenced", err)
		}
		if n := len(srv.tries()); n != 1 {
			t.Errorf("%d tries reached the API server, want the refused one only", n)
		}
	})
}
