package proxycore

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/proxy/h2c"
)

// testStreams is the smallest StreamPolicy: its targets in order, Retry
// to the next while there is one, failures answered as "fail: ERR".
type testStreams struct {
	mu       sync.Mutex
	targets  []string
	next     int
	answered int
	failed   []error
}

func (p *testStreams) Target() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.targets[p.next]
}

func (p *testStreams) Rewrite(out http.Header) { out.Set("X-Policy", "set") }

func (p *testStreams) Answered(*http.Response) {
	p.mu.Lock()
	p.answered++
	p.mu.Unlock()
}

func (p *testStreams) Retry(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next+1 == len(p.targets) {
		return err
	}
	p.next++
	return nil
}

func (p *testStreams) Fail(w http.ResponseWriter, _ *http.Request, err error) {
	p.mu.Lock()
	p.failed = append(p.failed, err)
	p.mu.Unlock()
	w.WriteHeader(http.StatusBadGateway)
	_, _ = io.WriteString(w, "fail: "+err.Error())
}

// h2App serves h as h2c on 127.0.0.1 until the test ends; it returns the
// address.
func h2App(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := h2c.NewServer(h, h2c.ServerOptions{HeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return ln.Addr().String()
}

// forwardStream sends r through a StreamHop with policy p and bounds b.
func forwardStream(p StreamPolicy, r *http.Request, b StreamBounds) *httptest.ResponseRecorder {
	hop := NewStreamHop(StreamHopOptions{Transport: h2c.NewTransport(h2c.TransportOptions{DialTimeout: time.Second}),
		WriteTimeout: 10 * time.Second})
	w := httptest.NewRecorder()
	s := hop.Begin(r, b)
	defer s.End()
	hop.Forward(w, s, p)
	return w
}

// A stream that reached no upstream (the dial failed, its body unread)
// goes to the policy's next one; what arrives there has the policy's
// field, one X-Forwarded-For line for all the client's with the client
// at its end, and no hop-by-hop field.
func TestStreamRetriesWhatWasNotSent(t *testing.T) {
	app := h2App(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, strings.Join([]string{string(body), r.Header.Get("X-Policy"),
			strings.Join(r.Header.Values("X-Forwarded-For"), "|"), r.Header.Get("Proxy-Authorization")}, ";"))
	})
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	_ = dead.Close() // nothing listens there: the dial is refused
	p := &testStreams{targets: []string{deadAddr, app}}
	r := httptest.NewRequest(http.MethodPost, "http://x/", strings.NewReader("body"))
	r.Header.Add("X-Forwarded-For", "1.1.1.1")
	r.Header.Add("X-Forwarded-For", "2.2.2.2")
	r.Header.Set("Proxy-Authorization", "Basic eA==")
	w := forwardStream(p, r, StreamBounds{Start: time.Now(), Timeout: 10 * time.Second})
	if got, want := w.Body.String(), "body;set;1.1.1.1, 2.2.2.2, 192.0.2.1;"; w.Code != 200 || got != want {
		t.Errorf("answer %d %q, want 200 %q", w.Code, got, want)
	}
	if p.next != 1 || p.answered != 1 || len(p.failed) != 0 {
		t.Errorf("next %d, answered %d, failed %v; want the second target, answered once", p.next, p.answered, p.failed)
	}
}

// The first byte due sooner than the whole stream: a silent upstream is
// ErrHeadTimeout; at the whole deadline, ErrBodyTimeout.
func TestStreamDeadlines(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	app := h2App(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	for _, tc := range []struct {
		name string
		b    StreamBounds
		want error
	}{
		{"first byte", StreamBounds{Timeout: 10 * time.Second, Head: 200 * time.Millisecond}, ErrHeadTimeout},
		{"whole stream", StreamBounds{Timeout: 200 * time.Millisecond}, ErrBodyTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &testStreams{targets: []string{app}}
			tc.b.Start = time.Now()
			forwardStream(p, httptest.NewRequest(http.MethodGet, "http://x/", nil), tc.b)
			if len(p.failed) != 1 || !errors.Is(p.failed[0], tc.want) {
				t.Errorf("failed with %v, want %v", p.failed, tc.want)
			}
		})
	}
}
