package connlimit

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func listen(t *testing.T, o Options) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := Listen(l, o)
	t.Cleanup(func() { ll.Close() })
	return ll
}

// dialFrom connects to l from the loopback address src (all of 127/8 is
// local on Linux).
func dialFrom(t *testing.T, l net.Listener, src string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Skipf("dialing from %s: %v", src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// accept returns the next connection l hands out, or nil after 300ms.
func accept(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	got := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		got <- c
	}()
	select {
	case c := <-got:
		return c
	case <-time.After(300 * time.Millisecond): // a bound on a negative, not a speed assertion
		return nil // the Accept ends when the test's cleanup closes l
	}
}

func TestPerIP(t *testing.T) {
	l := listen(t, Options{PerIP: 2, Refuse: []byte("no\n")})
	var held []net.Conn
	for range 2 {
		dialFrom(t, l, "127.0.0.1")
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	over := dialFrom(t, l, "127.0.0.1")
	dialFrom(t, l, "127.0.0.2")
	c, err := l.Accept() // refuses over, hands out other
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RemoteAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.2" {
		t.Errorf("accepted a connection from %s, want 127.0.0.2 (127.0.0.1 is at its cap)", got)
	}
	over.SetReadDeadline(time.Now().Add(5 * time.Second))
	if answer, _ := io.ReadAll(over); string(answer) != "no\n" {
		t.Errorf("the connection over the cap got %q, want the refusal and a close", answer)
	}
	held[0].Close()
	held[0].Close() // a second Close gives nothing back twice
	dialFrom(t, l, "127.0.0.1")
	if c := accept(t, l); c == nil {
		t.Error("no connection accepted after one from 127.0.0.1 closed")
	}
	dialFrom(t, l, "127.0.0.1")
	if c := accept(t, l); c != nil {
		t.Error("a third connection from 127.0.0.1 was accepted: the double Close gave its place back twice")
	}
}

func TestMaxWaits(t *testing.T) {
	l := listen(t, Options{Max: 1})
	dialFrom(t, l, "127.0.0.1")
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	dialFrom(t, l, "127.0.0.1")
	got := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		got <- c
	}()
	select {
	case <-got:
		t.Fatal("a second connection was handed out while the first was open")
	case <-time.After(200 * time.Millisecond): // a bound on a negative
	}
	first.Close()
	if c := <-got; c == nil {
		t.Error("Accept failed after the first connection closed")
	}
	// Close unblocks a waiting Accept.
	errc := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		errc <- err
	}()
	l.Close()
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
	}
}
