package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The differential fuzzer: the same HTTP/1.1 request stream goes to a
// reference Go net/http server and, through each route, to the same app
// (a net/http server too); what the apps see must be the same. Compared
// per request, in order: the method, the path and query, the host, every
// end-to-end header field (endToEnd says which are not), the body's bytes,
// and whether the body ended cleanly or with an error. A route may deliver fewer requests than the reference only if it
// answered the client with an error status or closed its connection
// after an answer (documented stricter refusals: docs/queueproxy.md and
// docs/activator.md, "Broken requests" and the framing and target
// rules); it never delivers one the reference did not see, nor a clean
// body where the reference read an error (a request the reference read
// with an error may be missing: the proxy gave up on it). The seeds (testdata/fuzz/FuzzDifferentialHTTP1) run in make
// test; go test -fuzz=FuzzDifferentialHTTP1 ./test/ledger mutates them.

// seen is one request as an app saw it.
type seen struct {
	Method, Path, Host, Fields, Body string
	Clean                            bool
}

// notPassed are the fields a hop may change by design, each with why;
// every other field must reach the app as the reference server read it
// (same name, same values, in order).
var notPassed = map[string]string{
	// Hop-by-hop (RFC 9110 §7.6.1): each connection has its own.
	"Connection": "hop-by-hop", "Keep-Alive": "hop-by-hop", "Proxy-Connection": "hop-by-hop",
	"Te": "hop-by-hop", "Trailer": "hop-by-hop", "Upgrade": "hop-by-hop",
	"Proxy-Authorization": "hop-by-hop", "Proxy-Authenticate": "hop-by-hop",
	// Framing: a hop may send a body with a length that came chunked, or
	// the other way round; the body's bytes and its clean end are compared.
	"Content-Length": "framing", "Transfer-Encoding": "framing",
	// Each hop appends the client's address and sets the scheme
	// (docs/queueproxy.md, "Headers").
	"X-Forwarded-For": "set by each hop", "X-Forwarded-Proto": "set by each hop",
	// Ebb's own markers: only Ebb sets them, and a client's are removed
	// (docs/activator.md, the proxy marker).
	"K-Proxy-Request": "Ebb's marker", "Ebb-Forwarded": "Ebb's marker", "Ebb-Revision": "Ebb's marker",
	"Ebb-Partial": "Ebb's marker",
}

// endToEnd renders the fields of h that must pass every hop unchanged,
// sorted by name, a field's values in the order they came, and the names
// its Connection field lists left out (they are hop-by-hop too).
func endToEnd(h http.Header) string {
	skip := map[string]bool{}
	for _, v := range h.Values("Connection") {
		for _, n := range strings.Split(v, ",") {
			skip[http.CanonicalHeaderKey(strings.TrimSpace(n))] = true
		}
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if _, ok := notPassed[k]; ok || skip[k] {
			continue
		}
		fmt.Fprintf(&b, "%s: %q\n", k, h[k])
	}
	return b.String()
}

// recorder is the fuzzer's app: it records every request. mu owns reqs,
// gen, inFlight and started; open counts its open connections. A request
// belongs to the input (gen) it came in with: one that ends after the
// next input began (its body held by a server that keeps a dead client's
// connection for a second) is not that input's, and is dropped.
type recorder struct {
	mu       sync.Mutex
	reqs     []seen
	gen      int       // the input's generation (clear starts the next)
	inFlight int       // requests of this generation in flight
	started  time.Time // when the latest request came in
	open     atomic.Int64
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	gen := rc.gen
	rc.inFlight++
	rc.started = time.Now()
	rc.mu.Unlock()
	b, err := io.ReadAll(r.Body)
	rc.mu.Lock()
	if gen != rc.gen {
		rc.mu.Unlock()
		return
	}
	if r.Header.Get("K-Network-Probe") == "" {
		path := r.URL.EscapedPath()
		if path == "" {
			path = "/" // an absolute-form target without a path names "/" (RFC 9112 §3.2.2)
		}
		rc.reqs = append(rc.reqs, seen{Method: r.Method, Path: path + "?" + r.URL.RawQuery,
			Host: r.Host, Fields: endToEnd(r.Header), Body: string(b), Clean: err == nil})
	}
	rc.inFlight--
	rc.mu.Unlock()
	if r.Header.Get("K-Network-Probe") != "" {
		_, _ = io.WriteString(w, "queue")
		return
	}
	_, _ = io.WriteString(w, "ok")
}

// quietFor reports whether no request is in flight and none came in for d.
func (rc *recorder) quietFor(d time.Duration) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.inFlight == 0 && time.Since(rc.started) >= d
}

// clear forgets the requests seen so far, and those still in flight.
func (rc *recorder) clear() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.reqs, rc.inFlight = nil, 0
	rc.gen++
}

func (rc *recorder) take() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

// startRecorder serves a recorder on 127.0.0.1.
func startRecorder(t testing.TB) (*recorder, string) {
	ln := listen(t)
	rc := &recorder{}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	s := &http.Server{Handler: rc, ReadHeaderTimeout: 2 * time.Second, Protocols: &p, ConnState: countConns(&rc.open)}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return rc, ln.Addr().String()
}

// play sends stream to addr, closes its side, and returns what came back
// within a few seconds, and whether the server held the connection open
// that long.
func play(t testing.TB, addr string, stream []byte, _ bool) played {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	go func() {
		_, _ = conn.Write(stream)
		_ = conn.(*net.TCPConn).CloseWrite()
	}()
	out, err := io.ReadAll(conn)
	return played{answers: out, held: errors.Is(err, os.ErrDeadlineExceeded)}
}

// refused reports whether an answer stream holds an error status, or an
// answer that closed the connection (a request with both Content-Length
// and Transfer-Encoding is answered and its connection closed, RFC 9112
// §6.1): the requests after it were never answered, so the client knows
// they were not processed.
func refused(answers []byte) bool {
	return bytes.Contains(answers, []byte("HTTP/1.1 4")) || bytes.Contains(answers, []byte("HTTP/1.1 5")) ||
		bytes.Contains(bytes.ToLower(answers), []byte("\r\nconnection: close\r\n"))
}

func FuzzDifferentialHTTP1(f *testing.F) {
	f.Add([]byte("POST /a?x=1 HTTP/1.1\r\nHost: ledger.default\r\nX-Fuzz: 1\r\nContent-Length: 5\r\n\r\nhello"))
	for _, s := range progSeedsHTTP1 {
		f.Add(s)
	}
	g := newRig(f)
	g.forReference = skipEmptyLines
	inOrder := func(s []seen) []seen { return s }
	f.Fuzz(func(t *testing.T, stream []byte) {
		if len(stream) > 64<<10 {
			return
		}
		if len(stream) > 0 && stream[0] == progMode {
			stream = programHTTP1(stream[1:])
		}
		g.input(t, stream, play, refused, inOrder)
	})
}

// skipEmptyLines drops the empty lines before a stream's first request
// line: RFC 9112 §2.2 says a server should ignore at least one, which the
// hops (fasthttp) do and net/http does not (it answers 400).
func skipEmptyLines(stream []byte) []byte {
	for {
		switch {
		case bytes.HasPrefix(stream, []byte("\r\n")):
			stream = stream[2:]
		case bytes.HasPrefix(stream, []byte("\n")):
			stream = stream[1:]
		default:
			return stream
		}
	}
}

// compareSeen is the fuzzer's rule (above).
func compareSeen(want, got []seen, refusedOne bool) string {
	// A request the reference read with an error (its client cut it) may
	// never reach the app behind a route: the proxy gave up on it first.
	var kept []seen
	for _, w := range want {
		if w.Clean || slices.ContainsFunc(got, func(g seen) bool { return same(w, g) }) {
			kept = append(kept, w)
		}
	}
	want = kept
	if len(got) > len(want) {
		return fmt.Sprintf("%d requests reached the app, the reference saw %d", len(got), len(want))
	}
	// What the app saw is what the reference saw, in order, less the
	// requests a hop refused (an error answer: one for another host, say,
	// and the connection goes on), only where the client got a refusal.
	j := 0
	for i, g := range got {
		if !g.Clean && refusedOne && i == len(got)-1 && j < len(want) && want[j].Clean {
			return "" // a stricter refusal mid-body: the app saw an error, never a whole body
		}
		k := j
		for k < len(want) && !same(want[k], g) {
			k++
		}
		switch {
		case k == len(want):
			return fmt.Sprintf("request %d differs%s", i, seenDiff(want[min(j, len(want)-1)], g))
		case k > j && !refusedOne:
			return fmt.Sprintf("request %d of the reference never reached the app, and the client got no error answer%s", j, seenDiff(want[j], g))
		}
		j = k + 1
	}
	if j < len(want) && !refusedOne {
		return fmt.Sprintf("%d requests reached the app without an error answer, the reference saw %d", len(got), len(want))
	}
	return ""
}

// same reports whether the app saw the request the reference saw. A
// request both read with an error may have reached the app with fewer of
// its bytes: a hop streams a body and stops at the client's cut, which
// can come before the last bytes the reference still read.
func same(w, g seen) bool {
	if !w.Clean && !g.Clean && strings.HasPrefix(w.Body, g.Body) {
		g.Body = w.Body
	}
	return w == g
}

// seenDiff names what differs between two requests.
func seenDiff(w, g seen) string {
	var out []string
	add := func(what, want, got string) {
		if want != got {
			out = append(out, fmt.Sprintf("%s: reference %.200q, app %.200q", what, want, got))
		}
	}
	add("method", w.Method, g.Method)
	add("target", w.Path, g.Path)
	add("host", w.Host, g.Host)
	add("fields", w.Fields, g.Fields)
	add("body", w.Body, g.Body)
	if w.Clean != g.Clean {
		out = append(out, fmt.Sprintf("clean end: reference %v, app %v", w.Clean, g.Clean))
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}
