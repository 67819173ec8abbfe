package activator

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

// TestStaleConnection: a keep-alive connection the replica closed while
// idle is replaced (proxycore's Trip) without the replica leaving the
// rotation: the activator's Retry is not asked.
func TestStaleConnection(t *testing.T) {
	h := newHarness(t, nil, rev("hello", 0, Replica{Address: "r1:80", Ready: true}))
	var closed atomic.Int64
	h.backendWith("r1:80", true, func(s *fasthttp.Server) {
		s.IdleTimeout = 20 * time.Millisecond // drops idle keep-alive connections
		s.ConnState = func(_ net.Conn, st fasthttp.ConnState) {
			if st == fasthttp.StateClosed {
				closed.Add(1)
			}
		}
	})
	for i := range 3 {
		if code, body, _ := h.do("hello.default", nil); code != 200 {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
		n := int64(i + 1)
		h.eventually("the replica closed the idle connection", func() bool { return closed.Load() >= n })
	}
	if down := testutil.ToFloat64(h.a.metrics.replicaDown); down != 0 {
		t.Errorf("the replica left the rotation %v times", down)
	}
}
