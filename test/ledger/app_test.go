package ledger

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/stats"
)

// idHeader carries the client's request id to the app.
const idHeader = "Ledger-Id"

// execHeader names, in the app's answer, the execution that answered.
const execHeader = "Ledger-Exec"

// faults are the app's misbehaviours for one scenario. Each is decided by
// the request (method, id), not by timing.
type faults struct {
	// closeAfterPost: a POST is read whole and executed, then the
	// connection is closed without an answer (a crash after the work).
	closeAfterPost bool
	// idleClose closes a connection that waits this long for a request
	// (0: never).
	idleClose time.Duration
	// killOn: when the head of the first request with one of these ids
	// arrives, the app is killed (listener and every connection closed,
	// the body unread, nothing executed) and restarted on its address.
	killOn map[string]bool
	// slow delays the answer, and again between its head and its body.
	slow time.Duration
	// appFields are added to every answer's head (each line ending in CRLF).
	appFields string
}

// execution is one request the app executed: it read the whole body its
// framing announced.
type execution struct {
	Seq    int // 1-based, in the order the bodies ended
	ID     string
	Method string
	Path   string
	Len    int
	Sum    [sha256.Size]byte
	XFF    []string    // its X-Forwarded-For lines, as the app got them
	Header http.Header // the rest of its head
}

// app is the ledger's test app. mu owns every field below it.
type app struct {
	t      testing.TB
	addr   string // fixed at start; a restart listens on it again
	faults faults
	wg     sync.WaitGroup // connection and accept goroutines

	mu      sync.Mutex
	ln      net.Listener
	conns   map[net.Conn]bool
	execs   []execution
	killed  map[string]bool
	kills   int
	aborted int // requests whose body did not arrive whole
	// heads and cut count, by request id, the heads that arrived and the
	// bodies that then did not arrive whole (the app saw a read error).
	heads, cut map[string]int
	idleGone   int // connections closed by idleClose
	stopped    bool
}

// startApp listens on 127.0.0.1 and serves until the test ends.
func startApp(t testing.TB, f faults) *app {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &app{t: t, addr: ln.Addr().String(), faults: f, ln: ln, conns: map[net.Conn]bool{}, killed: map[string]bool{},
		heads: map[string]int{}, cut: map[string]int{}}
	a.wg.Go(func() { a.accept(ln) })
	t.Cleanup(a.stop)
	return a
}

func (a *app) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		a.mu.Lock()
		if a.stopped || a.ln != ln { // killed between Accept and here
			a.mu.Unlock()
			c.Close()
			continue
		}
		a.conns[c] = true
		a.wg.Go(func() { a.serve(c) })
		a.mu.Unlock()
	}
}

// stop closes everything and waits for the goroutines.
func (a *app) stop() {
	a.mu.Lock()
	a.stopped = true
	a.ln.Close()
	for c := range a.conns {
		c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
}

// kill closes the listener and every connection, then listens again on
// the same address: a crashed process replaced by a new one.
func (a *app) kill() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.kills++
	a.ln.Close()
	for c := range a.conns {
		c.Close()
		delete(a.conns, c)
	}
	if a.stopped {
		return
	}
	var err error
	for range 50 { // the port is ours; a retry covers a slow close
		var ln net.Listener
		if ln, err = net.Listen("tcp", a.addr); err == nil {
			a.ln = ln
			a.wg.Go(func() { a.accept(ln) })
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.t.Errorf("restarting the app on %s: %v", a.addr, err)
}

// serve reads requests from c until it closes or a fault ends it.
func (a *app) serve(c net.Conn) {
	defer func() {
		c.Close()
		a.mu.Lock()
		delete(a.conns, c)
		a.mu.Unlock()
	}()
	br := bufio.NewReaderSize(c, 4<<10)
	for {
		if a.faults.idleClose > 0 {
			_ = c.SetReadDeadline(time.Now().Add(a.faults.idleClose))
		}
		if _, err := br.Peek(1); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				a.mu.Lock()
				a.idleGone++
				a.mu.Unlock()
			}
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second)) // bounds a body that never ends
		if !a.serveOne(c, br) {
			return
		}
	}
}

// serveOne handles one request; false ends the connection.
func (a *app) serveOne(c net.Conn, br *bufio.Reader) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false // garbage: a real server would answer 400 and close
	}
	if req.Header.Get(stats.ProbeHeaderName) == stats.ProbeHeaderValue {
		_, _ = io.Copy(io.Discard, req.Body)
		return a.answer(c, 200, "", stats.ProbeHeaderValue, req.Close)
	}
	id := req.Header.Get(idHeader)
	a.mu.Lock()
	a.heads[id]++
	a.mu.Unlock()
	if a.killFirst(id) {
		a.kill()
		return false
	}
	h := sha256.New()
	n, err := io.Copy(h, req.Body)
	if err != nil {
		a.mu.Lock()
		a.aborted++
		a.cut[id]++
		a.mu.Unlock()
		return false // the body did not arrive whole: nothing is executed
	}
	e := execution{ID: id, Method: req.Method, Path: req.URL.Path, Len: int(n), XFF: req.Header.Values("X-Forwarded-For"),
		Header: req.Header}
	h.Sum(e.Sum[:0])
	a.mu.Lock()
	e.Seq = len(a.execs) + 1
	a.execs = append(a.execs, e)
	a.mu.Unlock()
	if a.faults.closeAfterPost && req.Method == http.MethodPost {
		return false
	}
	if a.faults.slow > 0 {
		time.Sleep(a.faults.slow)
	}
	return a.answer(c, e.Seq, id, "ok "+id, req.Close)
}

// killFirst reports whether id's arrival kills the app (once per id).
func (a *app) killFirst(id string) bool {
	if !a.faults.killOn[id] {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.killed[id] {
		return false
	}
	a.killed[id] = true
	return true
}

// answer writes a 200 naming the execution seq (0 for a probe).
func (a *app) answer(c net.Conn, seq int, id, body string, closeAfter bool) bool {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n", len(body))
	if id != "" {
		fmt.Fprintf(&b, "%s: %d\r\n", execHeader, seq)
	}
	if closeAfter {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString(a.faults.appFields)
	b.WriteString("\r\n")
	if a.faults.slow > 0 {
		if _, err := io.WriteString(c, b.String()); err != nil {
			return false
		}
		time.Sleep(a.faults.slow)
		b.Reset()
	}
	b.WriteString(body)
	_, err := io.WriteString(c, b.String())
	return err == nil && !closeAfter
}

// openConns is the number of connections the app holds open.
func (a *app) openConns() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.conns)
}

// faultCounts says how often the app misbehaved: kills, idle connections
// closed, bodies that did not arrive whole (so were not executed).
func (a *app) faultCounts() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("%d/%d/%d", a.kills, a.idleGone, a.aborted)
}

// seen reports how many heads of id arrived, and how many of their
// bodies the app found cut (a read error).
func (a *app) seen(id string) (heads, cut int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.heads[id], a.cut[id]
}

// ledger returns a copy of the executions.
func (a *app) ledger() []execution {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]execution(nil), a.execs...)
}
