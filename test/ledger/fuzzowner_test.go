package ledger

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzAnswerOwner fuzzes the app's side: the app behind each route is a
// raw TCP server whose answers the input writes, framing mistakes and
// all (a body on a HEAD, 204 or 304 answer, Content-Length with chunked,
// more bytes than the Content-Length says, whole stray answers after an
// answer's end, sent at once or after the proxy has pooled the
// connection). The differential fuzzers cannot reach these: their apps
// are net/http servers, which never leave bytes after an answer.
//
// Its oracle is a ledger of owners: every byte the app writes belongs to
// one request (each answer, stray bytes included, carries the request's
// id in an X-Answer-Of field and its body), and a client must never get
// an answer or body bytes of another request's id. A proxy may refuse an
// answer it cannot frame (a 502 without an owner), or close the
// connection; it may not hand one request's bytes to another (clean.go in
// pkg/proxy/proxycore). Every answer ends the same way on each route, so
// the routes are played at once; ids are unique within the process.
//
// An input is a program: ownerOpLen bytes per request (method, status,
// framing, body size, strays, flags), see ownerOp.
func FuzzAnswerOwner(f *testing.F) {
	for _, s := range ownerSeeds {
		f.Add(s)
	}
	g := newOwnerRig(f)
	f.Fuzz(func(t *testing.T, p []byte) {
		ops := ownerProgram(p)
		if len(ops) == 0 {
			return
		}
		for _, problem := range g.input(ops) {
			t.Error(problem)
		}
	})
}

// ownerOp is one request of a FuzzAnswerOwner program and how the app
// answers it. Its bytes, in order: method (ownerMethods), status
// (ownerStatuses), framing (ownerFramings), body size, strays (0: none; n:
// 4n stray answers after the answer's end, up to 60 KiB, more than a
// proxy's read buffer holds), flags (bit 0: the strays are sent late, once
// the answer is out and the proxy may have pooled the connection; the
// client waits for them before its next request, since a request written
// before stray bytes arrive cannot be told from one they answer).
type ownerOp struct {
	method  string
	status  int
	framing int
	size    int
	strays  int
	late    bool
}

const ownerOpLen = 6

var (
	ownerMethods  = []string{http.MethodGet, http.MethodHead, http.MethodPost}
	ownerStatuses = []int{200, 204, 304, 206, 404, 500}
)

// The app's framings of an answer's body.
const (
	framingLength        = iota // Content-Length: the body's size
	framingChunked              // one chunk and the last
	framingLengthChunked        // Content-Length (size + 40), then Transfer-Encoding: chunked
	framingChunkedLength        // the same fields the other way round
	framingShortLength          // Content-Length says half of the bytes that follow
	framingClose                // no length: the body ends when the app closes the connection
	ownerFramings
)

// ownerProgram reads an input's requests (at most progRequests).
func ownerProgram(p []byte) []ownerOp {
	var ops []ownerOp
	for ; len(p) >= ownerOpLen && len(ops) < progRequests; p = p[ownerOpLen:] {
		ops = append(ops, ownerOp{
			method:  ownerMethods[int(p[0])%len(ownerMethods)],
			status:  ownerStatuses[int(p[1])%len(ownerStatuses)],
			framing: int(p[2]) % ownerFramings,
			size:    int(p[3]),
			strays:  4 * int(p[4]),
			late:    p[5]&1 != 0,
		})
	}
	return ops
}

// ownerSeeds are well-framed exchanges without strays: every bad answer
// is a mutation away.
var ownerSeeds = [][]byte{
	{0, 0, 0, 5, 0, 0},                               // GET, 200 with 5 bytes
	{2, 0, 1, 16, 0, 0, 0, 3, 0, 0, 0, 0},            // POST, 200 chunked; GET, 206 of 0 bytes
	{1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9}, // HEAD, 204, GET
}

// ownerRig is FuzzAnswerOwner's setup, started once per fuzzing process:
// per route, an ownerApp with the route's proxies in front of it.
type ownerRig struct {
	fronts []ownerFront
	nextID atomic.Int64
}

type ownerFront struct {
	r    route
	app  *ownerApp
	addr string
}

func newOwnerRig(tb testing.TB) *ownerRig {
	g := &ownerRig{}
	for _, r := range routes {
		app := startOwnerApp(tb)
		g.fronts = append(g.fronts, ownerFront{r: r, app: app, addr: front(tb, r, app.ln.Addr().String()).addr})
	}
	return g
}

// input plays ops through every route at once and returns what broke
// the ledger of owners.
func (g *ownerRig) input(ops []ownerOp) []string {
	first := g.nextID.Load() + 1
	var wg sync.WaitGroup
	problems := make([][]string, len(g.fronts))
	for i, f := range g.fronts {
		f.app.ops.Store(&ops)
		wg.Go(func() { problems[i] = g.client(f, ops, first) })
	}
	wg.Wait()
	var out []string
	for _, p := range problems {
		out = append(out, p...)
	}
	return out
}

// ownerSweeps are the well-answered requests after an input's own: stray
// bytes left on a pooled connection answer one of them.
const ownerSweeps = 2

// ownerWait bounds each answer and each wait for late strays.
const ownerWait = 2 * time.Second

// client sends ops then ownerSweeps plain GETs through f, one at a time on
// one keep-alive connection (a new one after a close), and checks every
// answer's owner.
func (g *ownerRig) client(f ownerFront, ops []ownerOp, first int64) []string {
	var problems []string
	var conn net.Conn
	var br *bufio.Reader
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for k := range len(ops) + ownerSweeps {
		method, which := http.MethodGet, "s"
		if k < len(ops) {
			method, which = ops[k].method, strconv.Itoa(k)
		}
		id := g.nextID.Add(1)
		if conn == nil {
			c, err := net.DialTimeout("tcp", f.addr, ownerWait)
			if err != nil {
				return append(problems, fmt.Sprintf("%s: %v", f.r, err))
			}
			conn, br = c, bufio.NewReader(c)
		}
		_ = conn.SetDeadline(time.Now().Add(ownerWait))
		req := fmt.Sprintf("%s /o/%d/%s HTTP/1.1\r\nHost: %s\r\n", method, id, which, host)
		if method == http.MethodPost {
			req += "Content-Length: 4\r\n\r\nping"
		} else {
			req += "\r\n"
		}
		got, keep := ownerExchange(conn, br, req, method)
		if p := ownerCheck(got, id, first); p != "" {
			problems = append(problems, fmt.Sprintf("%s: request %d (id %d, %s) %s\nprogram: %+v\nanswer: %.400q", f.r, k, id, method, p, ops, got))
		}
		if k < len(ops) && ops[k].late && ops[k].strays > 0 {
			f.app.waitLate(id)
		}
		if !keep {
			conn.Close()
			conn = nil
		}
	}
	return problems
}

// ownerExchange writes req and reads its answer: the head and the body
// as the client reads them, and whether the connection goes on.
func ownerExchange(conn net.Conn, br *bufio.Reader, req, method string) (answer []byte, keep bool) {
	if _, err := io.WriteString(conn, req); err != nil {
		return nil, false
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		return nil, false
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", resp.StatusCode)
	_ = resp.Header.Write(&b)
	b.WriteString("\n")
	b.Write(body)
	return b.Bytes(), err == nil && !resp.Close
}

// ownerTag is how an owner's id is written in the app's bodies.
var ownerTag = regexp.MustCompile(`\[(\d+)\]`)

// ownerCheck returns what is wrong with an answer to request id: an
// X-Answer-Of field or a body tag that names another id.
func ownerCheck(answer []byte, id, first int64) string {
	whose := func(other string) string {
		n, _ := strconv.ParseInt(other, 10, 64)
		if n < first {
			return fmt.Sprintf("an earlier input's request %d", n)
		}
		return "request " + other
	}
	for _, line := range strings.Split(string(answer), "\n") {
		if v, ok := strings.CutPrefix(line, "X-Answer-Of: "); ok && strings.TrimSpace(v) != strconv.FormatInt(id, 10) {
			return fmt.Sprintf("got the answer of %s (X-Answer-Of: %s)", whose(strings.TrimSpace(v)), strings.TrimSpace(v))
		}
	}
	for _, m := range ownerTag.FindAllSubmatch(answer, -1) {
		if string(m[1]) != strconv.FormatInt(id, 10) {
			return fmt.Sprintf("got body bytes of %s", whose(string(m[1])))
		}
	}
	return ""
}

// ownerApp is FuzzAnswerOwner's app: a raw HTTP/1.1 server on 127.0.0.1
// that answers /o/<id>/<k> as the current program's op k says (anything
// else, and k "s", well: 200 with a tagged body). lateMu owns late; ops is
// the program, set before each input.
type ownerApp struct {
	*rawServer
	ops atomic.Pointer[[]ownerOp]

	lateMu sync.Mutex
	late   map[int64]chan struct{} // closed once a late answer's strays are written
}

func startOwnerApp(tb testing.TB) *ownerApp {
	a := &ownerApp{late: map[int64]chan struct{}{}}
	a.rawServer = startRawServer(tb, answerEach(a.answer))
	return a
}

// waitLate waits until the late strays of request id are written (at
// most ownerWait).
func (a *ownerApp) waitLate(id int64) {
	a.lateMu.Lock()
	ch := a.late[id]
	a.lateMu.Unlock()
	if ch == nil {
		return // the request never reached the app
	}
	select {
	case <-ch:
	case <-time.After(ownerWait):
	}
	a.lateMu.Lock()
	delete(a.late, id)
	a.lateMu.Unlock()
}

// answer writes the answer to req (and what the op puts after it); false
// ends the connection.
func (a *ownerApp) answer(c net.Conn, req *http.Request) bool {
	if req.Header.Get("K-Network-Probe") != "" {
		_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nqueue")
		return err == nil
	}
	parts := strings.Split(req.URL.Path, "/")
	id, _ := strconv.ParseInt(parts[len(parts)-2], 10, 64)
	op := ownerOp{method: req.Method, status: 200, size: 8}
	if k, err := strconv.Atoi(parts[len(parts)-1]); err == nil && len(parts) == 4 {
		if ops := a.ops.Load(); ops != nil && k < len(*ops) {
			op = (*ops)[k]
		}
	}
	tag := fmt.Sprintf("[%d]", id)
	body := strings.Repeat(tag, op.size/len(tag)+1)[:op.size]
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nX-Answer-Of: %d\r\n", op.status, http.StatusText(op.status), id)
	switch op.framing {
	case framingLength:
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", op.size, body)
	case framingChunked:
		fmt.Fprintf(&b, "Transfer-Encoding: chunked\r\n\r\n%s", chunk(body))
	case framingLengthChunked:
		fmt.Fprintf(&b, "Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s", op.size+40, chunk(body))
	case framingChunkedLength:
		fmt.Fprintf(&b, "Transfer-Encoding: chunked\r\nContent-Length: %d\r\n\r\n%s", op.size+40, chunk(body))
	case framingShortLength:
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", op.size/2, body)
	case framingClose:
		fmt.Fprintf(&b, "Connection: close\r\n\r\n%s", body)
		_, _ = io.WriteString(c, b.String())
		return false
	}
	var strays strings.Builder
	for range op.strays {
		fmt.Fprintf(&strays, "HTTP/1.1 200 OK\r\nX-Answer-Of: %d\r\nContent-Length: %d\r\n\r\n%s", id, 2*len(tag), tag+tag)
	}
	if !op.late || op.strays == 0 {
		_, err := io.WriteString(c, b.String()+strays.String())
		return err == nil
	}
	done := make(chan struct{})
	a.lateMu.Lock()
	a.late[id] = done
	a.lateMu.Unlock()
	defer close(done)
	if _, err := io.WriteString(c, b.String()); err != nil {
		return false
	}
	time.Sleep(time.Millisecond) // the proxy reads the answer and pools the connection
	_, err := io.WriteString(c, strays.String())
	return err == nil
}

// chunk frames body as one chunk and the last.
func chunk(body string) string {
	if body == "" {
		return "0\r\n\r\n"
	}
	return fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
}

// TestAnswerOwnerOracle: FuzzAnswerOwner's oracle fails where a client
// reads the app's stray bytes as its answer (here, talking to the app with
// no proxy between: the client reads on where the app's answer ended), and
// passes well-framed exchanges.
func TestAnswerOwnerOracle(t *testing.T) {
	g := &ownerRig{}
	app := startOwnerApp(t)
	direct := ownerFront{r: "direct", app: app, addr: app.ln.Addr().String()}
	for _, s := range ownerSeeds {
		ops := ownerProgram(s)
		app.ops.Store(&ops)
		if problems := g.client(direct, ops, 1); len(problems) > 0 {
			t.Errorf("seed %v: %q", s, problems)
		}
	}
	for _, c := range []struct {
		name string
		prog []byte
	}{
		{"strays at once", []byte{0, 0, 0, 5, 1, 0}},
		{"strays late", []byte{0, 0, 0, 5, 1, 1}},
		{"strays after a chunked answer", []byte{0, 0, 1, 5, 1, 0}},
	} {
		ops := ownerProgram(c.prog)
		app.ops.Store(&ops)
		if problems := g.client(direct, ops, 1); len(problems) == 0 {
			t.Errorf("%s: a client that reads on past the answer got no other request's bytes", c.name)
		}
	}
}
