package ledger

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// An answer belongs to one request. An app that leaves bytes after an
// answer's end (a body on a HEAD or 204 answer, an answer framed both by
// Content-Length and chunked, more than its Content-Length) must never
// have them read as the answer to the next request on the same pooled
// connection: that would hand one client's bytes to another. Before,
// a later client's GET got the app's leftover bytes through each route.

// stray is what the app leaves after a bad answer: an answer of its own,
// which a proxy that reuses the connection takes for the next request's.
const stray = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nLEAK-stray!"

// leftoverCase is one way for the app to leave bytes after an answer.
type leftoverCase struct {
	name   string
	method string // of the bad request
	answer string // the bad answer, stray bytes included
}

var leftoverCases = []leftoverCase{
	{name: "head-with-body", method: http.MethodHead, answer: "HTTP/1.1 200 OK\r\nContent-Length: 49\r\n\r\n"},
	{name: "204-with-length", method: http.MethodGet, answer: "HTTP/1.1 204 No Content\r\nContent-Length: 49\r\n\r\n"},
	{name: "204-with-body", method: http.MethodGet, answer: "HTTP/1.1 204 No Content\r\n\r\n"},
	{name: "304-chunked", method: http.MethodGet, answer: "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"31\r\n" + stray + "\r\n0\r\n\r\n"},
	{name: "length-and-chunked", method: http.MethodGet, answer: "HTTP/1.1 200 OK\r\nContent-Length: 72\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"5\r\nhello\r\n0\r\n\r\n"},
	{name: "chunked-and-length", method: http.MethodGet, answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 72\r\n\r\n" +
		"5\r\nhello\r\n0\r\n\r\n"},
	{name: "longer-than-length", method: http.MethodGet, answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"},
}

// leftoverApp answers /bad/<case>/... with the case's answer followed by
// copies of stray, and anything else with its path, framed by
// Content-Length: a client whose answer is not its own path got another's
// bytes. copies is enough that a proxy's first read of the answer cannot
// take them all (its read buffer is 8 or 16 KiB): some are in its reader,
// the rest wait in the socket. With delay, the copies follow the answer
// after delay (they arrive while the connection is idle).
type leftoverApp struct {
	*rawServer
	delay  time.Duration
	copies int
}

func startLeftoverApp(t *testing.T, delay time.Duration, copies int) *leftoverApp {
	t.Helper()
	a := &leftoverApp{delay: delay, copies: copies}
	a.rawServer = startRawServer(t, answerEach(func(c net.Conn, req *http.Request) bool { return a.answer(c, req.URL.Path) }))
	return a
}

// answerEach serves a connection's requests one by one, each read whole
// (its body discarded) before answer writes its answer, until a request
// cannot be read or answer returns false.
func answerEach(answer func(net.Conn, *http.Request) bool) func(net.Conn) {
	return func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if !answer(c, req) {
				return
			}
		}
	}
}

// rawServer accepts connections on 127.0.0.1 and runs serve on each in its
// own goroutine, closing the connection when serve returns; the test's
// cleanup closes the listener and every open connection and waits for the
// goroutines. mu owns conns.
type rawServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func startRawServer(tb testing.TB, serve func(net.Conn)) *rawServer {
	s := &rawServer{ln: listen(tb), conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept(serve)
	tb.Cleanup(func() {
		s.ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *rawServer) accept(serve func(net.Conn)) {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.forget(c)
			serve(c)
		}()
	}
}

func (s *rawServer) forget(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// answer writes the answer to a request for path.
func (a *leftoverApp) answer(c net.Conn, path string) bool {
	for _, lc := range leftoverCases {
		if !strings.HasPrefix(path, "/bad/"+lc.name+"/") {
			continue
		}
		extra := strings.Repeat(stray, a.copies)
		if a.delay == 0 {
			_, err := io.WriteString(c, lc.answer+extra)
			return err == nil
		}
		if _, err := io.WriteString(c, lc.answer); err != nil {
			return false
		}
		time.Sleep(a.delay)
		_, err := io.WriteString(c, extra)
		return err == nil
	}
	_, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(path), path)
	return err == nil
}

// TestNoAnswerToAnotherClient: eight clients at once, each alternating a request
// the app answers with bytes left over and one it answers well, through
// each route: every good answer is the client's own, never stray bytes.
func TestNoAnswerToAnotherClient(t *testing.T) {
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			a := startLeftoverApp(t, 0, 1000) // 49 KB of stray answers
			d := front(t, r, a.ln.Addr().String())
			const clients, rounds = 8, 12
			errs := make(chan error, clients)
			var wg sync.WaitGroup
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- leftoverClient(d.addr, fmt.Sprint(i), rounds, 0)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestNoAnswerToAnotherClientLate: the stray bytes come 20ms after the
// bad answer, when the proxy has already pooled the connection; the next
// request comes after them. One client at a time (a request written
// before stray bytes arrive cannot be told from one they answer: no
// proxy can), through each route.
func TestNoAnswerToAnotherClientLate(t *testing.T) {
	for _, r := range routes {
		t.Run(string(r), func(t *testing.T) {
			a := startLeftoverApp(t, 20*time.Millisecond, 1)
			d := front(t, r, a.ln.Addr().String())
			if err := leftoverClient(d.addr, "late", 3, 60*time.Millisecond); err != nil {
				t.Error(err)
			}
		})
	}
}

// leftoverClient sends rounds of every bad case then a good request, each
// on its own keep-alive connection pool, pausing gap after each bad one,
// and checks every good answer is its own path.
func leftoverClient(addr, who string, rounds int, gap time.Duration) error {
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: requestTimeout}
	for i := range rounds {
		for _, lc := range leftoverCases {
			bad := fmt.Sprintf("http://%s/bad/%s/%s-%d", addr, lc.name, who, i)
			if err := leftoverDo(client, lc.method, bad, ""); err != nil {
				return fmt.Errorf("%s: %w", lc.name, err)
			}
			time.Sleep(gap)
			path := fmt.Sprintf("/good/%s/%s-%d", lc.name, who, i)
			if err := leftoverDo(client, http.MethodGet, "http://"+addr+path, path); err != nil {
				return fmt.Errorf("after %s: %w", lc.name, err)
			}
		}
	}
	return nil
}

// leftoverDo sends one request; a non-empty want is the body the answer
// must have. A bad request may fail (502), never carry stray bytes.
func leftoverDo(client *http.Client, method, url, want string) error {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return err
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case strings.Contains(string(body), "LEAK"):
		return fmt.Errorf("%s %s got stray bytes: %d %q", method, url, resp.StatusCode, body)
	case want != "" && (err != nil || string(body) != want):
		return fmt.Errorf("%s %s: got %d %q (%v), want its own path", method, url, resp.StatusCode, body, err)
	}
	return nil
}
