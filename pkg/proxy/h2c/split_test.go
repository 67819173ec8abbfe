package h2c

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSniff(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want protocol
	}{
		{name: "nothing yet", in: "", want: undecided},
		{name: "a prefix of the preface", in: "PRI", want: undecided},
		{name: "the preface", in: Preface, want: HTTP2},
		{name: "its first four bytes", in: "PRI ", want: HTTP2},
		{name: "a malformed preface goes to the HTTP/2 server, which rejects it", in: "PRI * HTTP/1.1\r\n\r\n", want: HTTP2},
		{name: "GET", in: "GET / HTTP/1.1\r\n", want: http1},
		{name: "POST", in: "POST / HTTP/1.1\r\n", want: http1},
		{name: "PUT decided at its second byte", in: "PU", want: http1},
		{name: "a method that starts like PRI", in: "PRINT / HTTP/1.1", want: http1},
		{name: "TLS", in: "\x16\x03\x01", want: http1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sniff([]byte(tt.in)); got != tt.want {
				t.Errorf("Sniff(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzSniff: a decision never changes when more bytes come, and only the
// preface's own bytes are HTTP/2.
func FuzzSniff(f *testing.F) {
	for _, s := range []string{"", "P", "PRI ", Preface, "GET /", "PRINT"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := sniff(b)
		for i := range len(b) {
			if p := sniff(b[:i]); p != undecided && p != got {
				t.Fatalf("Sniff(%q) = %d but Sniff of its first %d bytes = %d", b, got, i, p)
			}
		}
		if got == HTTP2 && string(b[:sniffLen]) != Preface[:sniffLen] {
			t.Fatalf("Sniff(%q) = HTTP2 without the preface", b)
		}
		if got == undecided && len(b) >= sniffLen {
			t.Fatalf("Sniff(%q) undecided with %d bytes", b, len(b))
		}
	})
}

// runSplit splits a 127.0.0.1 listener until the test ends.
func runSplit(t *testing.T, o SplitOptions) (*Split, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return runSplitOn(t, ln, o), ln.Addr().String()
}

// runSplitOn splits ln until the test ends.
func runSplitOn(t *testing.T, ln net.Listener, o SplitOptions) *Split {
	t.Helper()
	s := NewSplit(ln, o)
	done := make(chan error, 1)
	go func() { done <- s.Run() }()
	t.Cleanup(func() {
		_ = s.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10s of Close")
		}
	})
	return s
}

func accept(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := ln.Accept(); ch <- res{c, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		t.Cleanup(func() { _ = r.c.Close() })
		return r.c
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted within 10s")
		return nil
	}
}

func dial(t *testing.T, addr, first string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if first != "" {
		if _, err := io.WriteString(c, first); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// Each side gets its connections with every byte, the sniffed ones
// included; a silent client delays nobody and is closed at HeadTimeout.
func TestSplitSortsConnections(t *testing.T) {
	s, addr := runSplit(t, SplitOptions{HeadTimeout: 300 * time.Millisecond, MaxPending: 4})
	silent := dial(t, addr, "")
	dial(t, addr, "GET / HTTP/1.1\r\n\r\n")
	dial(t, addr, Preface+"rest")

	read := func(c net.Conn, n int) string {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, n)
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	h1 := accept(t, s.HTTP1())
	h2 := accept(t, s.HTTP2())
	got := []string{read(h1, len("GET / HTTP/1.1\r\n\r\n")), read(h2, len(Preface+"rest"))}
	if diff := cmp.Diff([]string{"GET / HTTP/1.1\r\n\r\n", Preface + "rest"}, got); diff != "" {
		t.Errorf("bytes each side read (-want +got):\n%s", diff)
	}
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("silent client: read %v, want EOF (closed after HeadTimeout)", err)
	}
}

// Closing one side closes the listener underneath: both Accepts end.
func TestSplitCloseEndsBothSides(t *testing.T) {
	s, addr := runSplit(t, SplitOptions{HeadTimeout: time.Second, MaxPending: 1})
	if err := s.HTTP1().Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.HTTP2().Accept(); err != net.ErrClosed {
		t.Errorf("HTTP2().Accept after HTTP1().Close = %v, want net.ErrClosed", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = c.Close()
		t.Error("dial after Close succeeded")
	}
}

// flakyListener fails its first Accept with a temporary error.
type flakyListener struct {
	net.Listener
	failed bool
}

type tempErr struct{}

func (tempErr) Error() string   { return "accept: too many open files" }
func (tempErr) Temporary() bool { return true }
func (tempErr) Timeout() bool   { return false }

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, tempErr{}
	}
	return l.Listener.Accept()
}

// A temporary Accept error (out of file descriptors) pauses the loop; it
// does not stop the port.
func TestSplitSurvivesTemporaryAcceptError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := runSplitOn(t, &flakyListener{Listener: ln}, SplitOptions{HeadTimeout: time.Second, MaxPending: 1})
	dial(t, ln.Addr().String(), "GET / HTTP/1.1\r\n\r\n")
	accept(t, s.HTTP1())
}
