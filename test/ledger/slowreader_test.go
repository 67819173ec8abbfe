package ledger

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"ebb.dev/ebb/internal/testnet"

	"ebb.dev/ebb/pkg/stats"
)

// bigBody is the answer a slow reader never takes: far more than the
// socket buffers of a loopback connection hold.
const bigBody = 32 << 20

// bigApp answers GET /big with bigBody bytes and anything else with "ok",
// over HTTP/1.1 and h2c (the proxies forward each protocol as it came).
type bigApp struct {
	addr    string
	started atomic.Int64 // /big answers begun
	ended   atomic.Int64 // /big answers given up (a write failed: the proxy dropped them)
	others  atomic.Int64 // answers to other paths
}

func startBigApp(t *testing.T) *bigApp {
	t.Helper()
	ln := listen(t)
	a := &bigApp{addr: ln.Addr().String()}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	s := &http.Server{Protocols: &p, Handler: http.HandlerFunc(a.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return a
}

func (a *bigApp) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(stats.ProbeHeaderName) == stats.ProbeHeaderValue {
		_, _ = io.WriteString(w, stats.ProbeHeaderValue)
		return
	}
	if r.URL.Path == "/steady" {
		chunk := make([]byte, 32<<10)
		for range steadyBody / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		return
	}
	if r.URL.Path != "/big" {
		a.others.Add(1)
		_, _ = io.WriteString(w, "ok")
		return
	}
	a.started.Add(1)
	w.Header().Set("Content-Type", "application/octet-stream")
	chunk := make([]byte, 32<<10)
	for sent := 0; sent < bigBody; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			a.ended.Add(1) // the proxy gave up on its client, and on this answer
			return
		}
	}
}

// steadyBody is the answer to /steady, which a slow reader takes whole.
const steadyBody = 192 << 10

// slowWriteTimeout is the proxies' client write timeout in these tests.
const slowWriteTimeout = time.Second

// TestSlowReaderLosesItsSlot: two clients that ask for a large answer and
// never read it hold both slots of a revision (containerConcurrency 2),
// through each proxy, over HTTP/1.1 (a 4 KiB receive buffer, never read)
// and HTTP/2 (streams granted no flow-control window). Within the write
// timeout their streams are cut and their slots freed: the other clients
// of the revision, queued meanwhile, all get 200 (before the fix they got
// 504 at their queue timeout, for as long as the slow readers wished).
func TestSlowReaderLosesItsSlot(t *testing.T) {
	for _, r := range []route{viaQueueProxy, viaActivator} {
		for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
			t.Run(string(r)+"/"+proto, func(t *testing.T) {
				t.Parallel()
				a := startBigApp(t)
				d := frontWith(t, r, a.addr, setup{cc: 2, writeTimeout: slowWriteTimeout})
				var cut func(t *testing.T)
				if proto == "HTTP/2" {
					cut = stallH2(t, d.addr, 2)
				} else {
					cut = stallHTTP1(t, d.addr, 2)
				}
				testnet.WaitUntil(t, "both slow answers started", func() bool { return a.started.Load() >= 2 })
				start := time.Now()
				get := newGetter(proto)
				for i := range 4 {
					status, err := get(d.addr, "/ok")
					if err != nil || status != http.StatusOK {
						t.Fatalf("request %d of another client while the slow readers stall: %d, %v; want 200", i, status, err)
					}
					if i == 0 {
						freed := time.Since(start)
						t.Logf("first slot back %v after the slow answers began (write timeout %v)", freed, slowWriteTimeout)
						// The bound is the write timeout; the margin is a loaded machine's.
						if freed > slowWriteTimeout+8*time.Second {
							t.Errorf("first slot back after %v, want within the write timeout %v (and a margin)", freed, slowWriteTimeout)
						}
					}
				}
				// The proxy dropped both slow answers (and so their
				// upstream connections or streams), and cut their clients.
				testnet.WaitUntil(t, "both slow answers dropped", func() bool { return a.ended.Load() >= 2 })
				cut(t)
			})
		}
	}
}

// newGetter is a client of the ledger's revision over proto.
func newGetter(proto string) func(addr, path string) (int, error) {
	tr := &http.Transport{DisableKeepAlives: proto != "HTTP/2"}
	if proto == "HTTP/2" {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
	}
	c := &http.Client{Transport: tr, Timeout: requestTimeout}
	return func(addr, path string) (int, error) {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			return 0, err
		}
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
}

// stallHTTP1 opens n connections with a 4 KiB receive buffer that each
// ask for /big and read nothing. cut checks that the proxy closed each
// of them before sending the whole answer.
func stallHTTP1(t *testing.T, addr string, n int) (cut func(t *testing.T)) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
		return errors.Join(err, serr)
	}}
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	return func(t *testing.T) {
		for i, c := range conns {
			_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
			n, err := io.Copy(io.Discard, c)
			switch {
			case isTimeout(err):
				t.Errorf("slow reader %d: its connection still open 15s after the other clients were served (%d bytes read)", i, n)
			case n >= bigBody:
				t.Errorf("slow reader %d: got the whole answer (%d bytes): the proxy waited for it", i, n)
			}
		}
	}
}

// stallH2 opens one HTTP/2 connection that grants no stream any
// flow-control window (SETTINGS_INITIAL_WINDOW_SIZE 0) and asks for /big
// on n streams. The connection itself keeps reading (and answering
// pings), so only the streams stall. cut checks that the proxy reset
// every stream (or closed the connection).
func stallH2(t *testing.T, addr string, n int) (cut func(t *testing.T)) {
	t.Helper()
	c := testnet.DialH2(t, addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	for i := range n {
		c.Request(t, uint32(2*i+1), "GET", host, "/big", true)
	}
	return func(t *testing.T) {
		streams, ok := c.Wait(15*time.Second, func(s map[uint32]testnet.H2Stream, ended bool) bool {
			reset := 0
			for _, st := range s {
				if st.Reset {
					reset++
				}
			}
			return ended || reset >= n
		})
		if !ok {
			t.Errorf("slow HTTP/2 streams not reset 15s after the other clients were served: %+v", streams)
		}
	}
}

// TestSlowSteadyReaderKeepsItsStream: an HTTP/2 client with a 64 KiB
// window that reads steadily (1 KiB every 20 ms), more slowly than 32 KiB
// per write timeout (600 ms here) but never stopping, gets its whole
// answer through each route. Before, each 32 KiB write had to find window
// within the timeout, and the stream was reset (INTERNAL_ERROR) once the
// first window was spent.
func TestSlowSteadyReaderKeepsItsStream(t *testing.T) {
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			t.Parallel()
			a := startBigApp(t)
			d := frontWith(t, r, a.addr, setup{writeTimeout: 600 * time.Millisecond})
			var p http.Protocols
			p.SetUnencryptedHTTP2(true)
			tr := &http.Transport{Protocols: &p, HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}}
			defer tr.CloseIdleConnections()
			req, err := http.NewRequest(http.MethodGet, "http://"+d.addr+"/steady", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = host
			resp, err := (&http.Client{Transport: tr, Timeout: requestTimeout}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			start := time.Now()
			var n int64
			for {
				k, err := io.CopyN(io.Discard, resp.Body, 1<<10)
				n += k
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatalf("the steady reader got %d bytes, then %v (after %v); want %d", n, err, time.Since(start), steadyBody)
					}
					break
				}
				time.Sleep(20 * time.Millisecond) // pacing the client, not an assertion
			}
			if resp.StatusCode != http.StatusOK || n != steadyBody {
				t.Fatalf("status %d, %d bytes; want 200 and %d", resp.StatusCode, n, steadyBody)
			}
		})
	}
}
