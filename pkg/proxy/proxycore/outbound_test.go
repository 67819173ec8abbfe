package proxycore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/internal/testnet"
)

// parseRequest parses a raw request as the proxies' servers do (the body
// streams, fasthttp prefetching up to maxBody).
func parseRequest(t testing.TB, raw string, maxBody int) *fasthttp.Request {
	t.Helper()
	req := &fasthttp.Request{}
	br := bufio.NewReader(strings.NewReader(raw))
	if err := req.Header.Read(br); err != nil {
		t.Fatalf("parsing the head: %v", err)
	}
	if err := req.ContinueReadBodyStream(br, maxBody, false); err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return req
}

func TestMaySendAgain(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name  string
		build func(*fasthttp.Request)
		wrote bool
		err   error
		want  bool
	}{
		{name: "dial error, POST with a streamed body: nothing sent", build: streamedPost, err: dial, want: true},
		{name: "failed before the write, POST", build: post, err: errors.New("no free connections"), want: true},
		{name: "GET without body, reset after the write", build: get, wrote: true, err: reset, want: true},
		{name: "PUT with a body in memory, EOF", build: put, wrote: true, err: io.EOF, want: true},
		{name: "DELETE, write failed", build: del, wrote: true, err: &writeError{Err: syscall.EPIPE}, want: true},
		{name: "POST with a body in memory, reset: may have been executed", build: post, wrote: true, err: reset, want: false},
		{name: "POST without a body, EOF", build: emptyPost, wrote: true, err: io.EOF, want: false},
		{name: "PUT with a streamed body: read once", build: streamedPut, wrote: true, err: io.EOF, want: false},
		{name: "GET after a timeout: never", build: get, wrote: true, err: fasthttp.ErrTimeout, want: false},
		{name: "GET after a malformed response", build: get, wrote: true, err: errors.New("malformed"), want: false},
		{name: "the client's body failed", build: streamedPut, wrote: true, err: &clientError{Err: io.ErrUnexpectedEOF}, want: false},
		{name: "no error", build: get, wrote: true, want: false},
		{name: "PUT with an empty body stream (Content-Length: 0)", build: emptyStreamedPut, wrote: true, err: io.EOF, want: true},
		{name: "not sent on by the next hop, POST in memory", build: post, wrote: true, err: errNotSent, want: true},
		{name: "not sent on by the next hop, POST streamed: read once", build: streamedPost, wrote: true, err: errNotSent, want: false},
		{name: "not sent on, wrapped, GET", build: get, wrote: true, err: fmt.Errorf("attempt: %w", errNotSent), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &fasthttp.Request{}
			tt.build(req)
			var o Outbound
			o.begin(req)
			o.wrote = tt.wrote
			if got := o.maySendAgain(tt.err); got != tt.want {
				t.Errorf("MaySendAgain(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func get(r *fasthttp.Request) { r.Header.SetMethod("GET") }
func del(r *fasthttp.Request) { r.Header.SetMethod("DELETE") }
func put(r *fasthttp.Request) { r.Header.SetMethod("PUT"); r.SetBodyString("state") }
func post(r *fasthttp.Request) {
	r.Header.SetMethod("POST")
	r.SetBodyString("charge-card-42")
}
func emptyPost(r *fasthttp.Request) { r.Header.SetMethod("POST") }
func streamedPost(r *fasthttp.Request) {
	r.Header.SetMethod("POST")
	r.SetBodyStream(strings.NewReader("0123456789"), 10)
}
func emptyStreamedPut(r *fasthttp.Request) {
	r.Header.SetMethod("PUT")
	r.SetBodyStream(strings.NewReader(""), 0)
}
func streamedPut(r *fasthttp.Request) {
	r.Header.SetMethod("PUT")
	r.SetBodyStream(strings.NewReader("0123456789"), 10)
}

// failingConn fails every write after the first n bytes.
type failingConn struct {
	net.Conn
	n int
}

func (c *failingConn) Write(p []byte) (int, error) {
	if len(p) > c.n {
		n := c.n
		c.n = 0
		return n, syscall.ECONNRESET
	}
	c.n -= len(p)
	return len(p), nil
}

// TestWriteTellsWhoseFault: a failure reading the client's streamed body
// is the client's (ClientError, 400), a failure writing to the upstream is
// the upstream's (WriteError); either way the body was not read to its end.
func TestWriteTellsWhoseFault(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	tests := []struct {
		name       string
		raw        string
		connBudget int // bytes the upstream takes before failing
		wantClient bool
		wantUnread bool
		wantErr    bool
	}{
		{name: "whole", raw: "PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", connBudget: 1 << 20},
		{name: "malformed chunk size", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
			connBudget: 1 << 20, wantErr: true, wantClient: true, wantUnread: true},
		{name: "body cut short", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n" + big,
			connBudget: 1 << 20, wantErr: true, wantClient: true, wantUnread: true},
		{name: "upstream gone mid-body", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 65536\r\n\r\n" + big,
			connBudget: 1000, wantErr: true, wantUnread: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := parseRequest(t, tt.raw, 1<<10)
			var o Outbound
			o.begin(req)
			hc := &fasthttp.HostClient{Addr: "upstream"}
			err := o.write(hc, &failingConn{n: tt.connBudget}, req)
			if (err != nil) != tt.wantErr || IsClientError(err) != tt.wantClient {
				t.Errorf("Write = %v; want error %v, client's %v", err, tt.wantErr, tt.wantClient)
			}
			var we *writeError
			if err != nil && !tt.wantClient && !errors.As(err, &we) {
				t.Errorf("Write = %v (%T), want a *WriteError", err, err)
			}
			if o.clientBodyUnread() != tt.wantUnread || !o.Wrote() {
				t.Errorf("unread %v wrote %v, want unread %v, wrote", o.clientBodyUnread(), o.Wrote(), tt.wantUnread)
			}
			if err != nil && o.maySendAgain(err) {
				t.Errorf("a request whose streamed body failed may be sent again")
			}
		})
	}
}

func TestReadHead(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		head     bool
		upgrade  bool
		wantCode int
		wantErr  error
	}{
		{name: "plain", raw: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", wantCode: 200},
		{name: "interim skipped", raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" +
			"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", wantCode: 201},
		{name: "101 to an upgrade", raw: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", upgrade: true, wantCode: 101},
		{name: "101 to anything else", raw: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", wantErr: errUnexpectedSwitch},
		{name: "too many interim", raw: strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", maxInterim+1), wantErr: errTooManyInterim},
		{name: "nothing", raw: "", wantErr: io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp fasthttp.Response
			err := readHead(&resp, bufio.NewReader(strings.NewReader(tt.raw)), tt.head, tt.upgrade)
			if !errors.Is(err, tt.wantErr) || err == nil && resp.StatusCode() != tt.wantCode {
				t.Errorf("got %d, %v; want %d, %v", resp.StatusCode(), err, tt.wantCode, tt.wantErr)
			}
		})
	}
}

func TestFramingOf(t *testing.T) {
	tests := []struct {
		name, raw string
		want      framing
	}{
		{name: "no body", raw: "GET / HTTP/1.1\r\nHost: a\r\n\r\n"},
		{name: "length", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"},
		{name: "chunked", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{name: "both", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
			want: framingAmbiguous},
		{name: "both, other order and case", raw: "POST / HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\ncontent-length: 5\r\n\r\n0\r\n\r\n",
			want: framingAmbiguous},
		{name: "identity", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", want: framingUnsupported},
		{name: "identity, any case", raw: "GET / HTTP/1.1\r\nHost: a\r\ntRANSFER-eNCODING: IDENTITY\r\n\r\n", want: framingUnsupported},
		{name: "identity with a length", raw: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\nContent-Length: 0\r\n\r\n",
			want: framingUnsupported},
		{name: "a field named like it", raw: "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encodings: identity\r\nContent-Lengthy: 1\r\n\r\n"},
		{name: "one content type", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Type: text/a, text/b\r\nContent-Length: 0\r\n\r\n"},
		{name: "two content types", raw: "GET /a?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: text/a\r\nContent-Type: text/b\r\n\r\n",
			want: framingTwoContentTypes},
		{name: "two equal content types, any case", raw: "GET / HTTP/1.1\r\nHost: a\r\ncontent-type: text/plain\r\nCONTENT-TYPE: text/plain\r\n\r\n",
			want: framingTwoContentTypes},
		{name: "two content types and both framings", raw: "POST / HTTP/1.1\r\nHost: a\r\nContent-Type: a/b\r\nContent-Length: 5\r\n" +
			"Transfer-Encoding: chunked\r\nContent-Type: a/b\r\n\r\n0\r\n\r\n", want: framingTwoContentTypes},
		{name: "a field named like content-type", raw: "GET / HTTP/1.1\r\nHost: a\r\nContent-Type: a/b\r\nContent-Types: a/b\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := parseRequest(t, tt.raw, 1<<10)
			if got := framingOf(&req.Header); got != tt.want {
				t.Errorf("FramingOf = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzFramingOf: whatever the head, FramingOf never panics and agrees
// with a naive reading of the raw header lines.
func FuzzFramingOf(f *testing.F) {
	f.Add("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n")
	f.Add("Content-Length: 5\r\n")
	f.Add("Transfer-Encoding: identity\r\n")
	f.Add("Content-Type: text/a\r\nContent-Type: text/b\r\n")
	f.Fuzz(func(t *testing.T, fields string) {
		var h fasthttp.RequestHeader
		if err := h.Read(bufio.NewReader(strings.NewReader("POST / HTTP/1.1\r\nHost: a\r\n" + fields + "\r\n"))); err != nil {
			return
		}
		var cl, te, chunked bool
		types := 0
		for _, line := range strings.Split(string(h.RawHeaders()), "\n") {
			name, value, ok := strings.Cut(strings.ToLower(line), ":")
			name = strings.TrimRight(name, " \t")
			switch {
			case !ok:
			case name == "content-length":
				cl = true
			case name == "content-type":
				types++
			case name == "transfer-encoding":
				codings := strings.Split(value, ",")
				te, chunked = true, strings.Trim(codings[len(codings)-1], " \t\r") == "chunked"
			}
		}
		want := framingClear
		switch {
		case te && !chunked:
			want = framingUnsupported
		case types > 1:
			want = framingTwoContentTypes
		case cl && te:
			want = framingAmbiguous
		}
		if got := framingOf(&h); got != want {
			t.Errorf("FramingOf(%q) = %v, want %v", fields, got, want)
		}
	})
}

// TestSplice: bytes go both ways, and the end of the upstream ends the
// tunnel even while the client says nothing.
func TestSplice(t *testing.T) {
	client, clientPeer := net.Pipe()
	upstream, upstreamPeer := net.Pipe()
	done := make(chan struct{})
	go func() { splice(client, upstream, upstream); close(done) }()
	go func() { _, _ = clientPeer.Write([]byte("ping")) }()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(upstreamPeer, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("upstream read %q, %v", buf, err)
	}
	go func() { _, _ = upstreamPeer.Write([]byte("pong")) }()
	if _, err := io.ReadFull(clientPeer, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("client read %q, %v", buf, err)
	}
	upstreamPeer.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the tunnel outlived its upstream")
	}
	if _, err := clientPeer.Read(buf); err == nil {
		t.Errorf("the client's side is still open")
	}
}

// TestWriteSkipsUncleanConn: no request, whatever its method, is written
// on a pooled connection whose peer has closed it or sent bytes on it
// while it was idle: Write says ErrStaleConn (ErrUnsolicited for bytes),
// nothing counts as sent, and the request may go on another connection.
func TestWriteSkipsUncleanConn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the peek is Linux only")
	}
	for _, tt := range []struct {
		name      string
		build     func(*fasthttp.Request)
		peer      func(net.Conn)
		wantErr   error
		wantState Peer
	}{
		{name: "POST, peer closed", build: post, peer: closePeer, wantErr: errStaleConn, wantState: PeerClosed},
		{name: "GET, peer closed", build: get, peer: closePeer, wantErr: errStaleConn, wantState: PeerClosed},
		{name: "GET, bytes while idle", build: get, peer: strayBytes, wantErr: errUnsolicited, wantState: peerSent},
		{name: "PUT, bytes then close", build: put, peer: func(c net.Conn) { strayBytes(c); c.Close() },
			wantErr: errUnsolicited, wantState: PeerSentThenClosed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client, server := testnet.TCPPair(t)
			tt.peer(server)
			// The bytes and the FIN arrive asynchronously: wait until a peek sees them.
			var k peeker
			deadline := time.Now().Add(10 * time.Second)
			for k.peek(client) != tt.wantState {
				if time.Now().After(deadline) {
					t.Fatalf("the peer's state %v was never seen", tt.wantState)
				}
				time.Sleep(time.Millisecond)
			}
			req := &fasthttp.Request{}
			req.SetRequestURI("http://upstream/")
			tt.build(req)
			var o Outbound
			o.begin(req)
			err := o.write(&fasthttp.HostClient{Addr: "upstream"}, client, req)
			if !errors.Is(err, tt.wantErr) || o.Wrote() {
				t.Errorf("Write = %v, wrote %v; want %v and nothing written", err, o.Wrote(), tt.wantErr)
			}
			if !o.maySendAgain(err) {
				t.Errorf("a request never written may not be sent again")
			}
		})
	}
	client, _ := testnet.TCPPair(t)
	var k peeker
	if got := k.peek(client); got != peerAlive {
		t.Errorf("an open idle connection peeks as %v", got)
	}
}

func closePeer(c net.Conn) { c.Close() }
func strayBytes(c net.Conn) {
	_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"))
}

// BenchmarkFramingOf: the scan of a request head's raw fields that every
// request gets, on a head of eight fields, Content-Type and Content-Length
// among them.
func BenchmarkFramingOf(b *testing.B) {
	req := parseRequest(b, "POST /api/v1/items?x=1 HTTP/1.1\r\nHost: app.default.svc\r\nUser-Agent: bench/1.0\r\nAccept: */*\r\n"+
		"Accept-Encoding: gzip\r\nContent-Type: application/json\r\nContent-Length: 2\r\nCookie: a=1\r\nX-Request-Id: 12345\r\n\r\n{}", 1<<10)
	b.ReportAllocs()
	for b.Loop() {
		if framingOf(&req.Header) != framingClear {
			b.Fatal("not clear")
		}
	}
}
