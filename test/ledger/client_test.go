package ledger

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// smuggledPath is the path of the requests embedded in every body: a
// request with it that reaches an app was cut out of another one's body.
const smuggledPath = "/smuggled"

// host routes to the ledger's revision at the activator (NAME.NAMESPACE).
const host = "ledger.default"

// embedded is the body's filler: whole requests, so that wherever a body
// is cut, the rest parses as requests that a proxy may forward.
const embedded = "\r\nGET " + smuggledPath + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n"

// bodyCase is one request shape of the matrix.
type bodyCase struct {
	name    string
	method  string
	size    int
	chunked bool
}

// cases cover both framings, GET and POST, and the sizes around the
// proxies' boundaries (the 8 KiB read buffers, the 64 KiB bodies buffered
// whole, larger ones streamed) up to 1 MiB.
var cases = []bodyCase{
	{"get-0", http.MethodGet, 0, false},
	{"get-1k", http.MethodGet, 1 << 10, false},
	{"get-100k-chunked", http.MethodGet, 100 << 10, true},
	{"post-0", http.MethodPost, 0, false},
	{"post-1k", http.MethodPost, 1 << 10, false},
	{"post-64k", http.MethodPost, 64 << 10, false},
	{"post-64k+1", http.MethodPost, 64<<10 + 1, false},
	{"post-300k", http.MethodPost, 300 << 10, false},
	{"post-1m", http.MethodPost, 1 << 20, false},
	{"post-4k-chunked", http.MethodPost, 4 << 10, true},
	{"post-200k-chunked", http.MethodPost, 200 << 10, true},
	{"post-1m-chunked", http.MethodPost, 1 << 20, true},
}

// sent is one request as the client sent it, and what came back.
type sent struct {
	id      string
	c       bodyCase
	sum     [sha256.Size]byte
	status  int    // 0: no answer
	exec    int    // the answer's execHeader
	answer  string // the answer's body
	connErr error  // the connection failed before a whole answer
}

// body is id's body: its id, then the filler, cut to size.
func body(id string, size int) []byte {
	b := make([]byte, 0, size+len(embedded))
	b = append(b, "ledger "+id+"\n"...)
	for len(b) < size {
		b = append(b, embedded...)
	}
	return b[:size]
}

// client sends requests on one keep-alive connection at a time, dialing
// again after a connection ends.
type client struct {
	addr string
	conn net.Conn
	br   *bufio.Reader
}

// requestTimeout bounds one request from dial to the answer's last byte:
// the proxies' request timeout (10s) and a margin.
const requestTimeout = 20 * time.Second

func (c *client) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// do sends one request and records its outcome in s.
func (c *client) do(s *sent, b []byte) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
		if err != nil {
			s.connErr = err
			return
		}
		c.conn, c.br = conn, bufio.NewReader(conn)
	}
	_ = c.conn.SetDeadline(time.Now().Add(requestTimeout))
	wrote := make(chan error, 1)
	go func() { wrote <- writeRequest(c.conn, s, b) }()
	resp, err := http.ReadResponse(c.br, &http.Request{Method: s.c.method})
	if err == nil {
		var a []byte
		a, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		s.status, s.answer = resp.StatusCode, string(a)
		s.exec, _ = strconv.Atoi(resp.Header.Get(execHeader))
		if err != nil {
			s.status = 0
		}
	}
	// Keep the connection only when the exchange ended cleanly; an answer
	// that came before the whole body was taken ends it.
	select {
	case werr := <-wrote:
		if err != nil || werr != nil || resp.Close {
			c.close()
		}
	case <-time.After(time.Second):
		c.close()
		<-wrote
	}
	if err != nil {
		s.connErr = err
	}
}

// writeRequest writes s with exact framing: Content-Length (none for a
// bodiless GET) or chunks of at most 16 KiB.
func writeRequest(w io.Writer, s *sent, b []byte) error {
	bw := bufio.NewWriterSize(w, 32<<10)
	fmt.Fprintf(bw, "%s /ledger/%s HTTP/1.1\r\nHost: %s\r\n%s: %s\r\n", s.c.method, s.id, host, idHeader, s.id)
	switch {
	case s.c.chunked:
		bw.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		for rest := b; len(rest) > 0; {
			n := min(len(rest), 16<<10)
			fmt.Fprintf(bw, "%x\r\n", n)
			bw.Write(rest[:n])
			bw.WriteString("\r\n")
			rest = rest[n:]
		}
		bw.WriteString("0\r\n\r\n")
	case len(b) == 0 && s.c.method == http.MethodGet:
		bw.WriteString("\r\n")
	default:
		fmt.Fprintf(bw, "Content-Length: %d\r\n\r\n", len(b))
		bw.Write(b)
	}
	return bw.Flush()
}

// outcome classifies what the client saw.
func (s *sent) outcome() string {
	switch {
	case s.connErr != nil && isTimeout(s.connErr):
		return "hung"
	case s.connErr != nil:
		return "conn-error"
	case s.status/100 == 2:
		return "2xx"
	case s.status/100 == 4 || s.status/100 == 5:
		return strconv.Itoa(s.status)
	default:
		return "status-" + strconv.Itoa(s.status)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// idempotent: RFC 9110 9.2.2.
func idempotent(method string) bool {
	return strings.Contains(" GET HEAD OPTIONS TRACE PUT DELETE ", " "+method+" ")
}
