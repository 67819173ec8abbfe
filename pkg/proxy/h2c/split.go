package h2c

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"ebb.dev/ebb/pkg/proxy/busypoll"
)

// Preface is the HTTP/2 client connection preface (RFC 9113 §3.4).
const Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// protocol is what a connection's first bytes say it speaks.
type protocol uint8

// The protocols Sniff tells apart.
const (
	undecided protocol = iota // too few bytes to tell
	http1
	HTTP2
)

// sniffLen is how many bytes decide: "PRI " starts the preface and no
// HTTP/1.1 request (RFC 9113 §3.4 reserves the method PRI for it), so a
// connection that starts with it goes to the HTTP/2 server, which checks
// the rest of the preface and answers a malformed one with a connection
// error.
const sniffLen = 4

// sniff decides from the first bytes of a connection.
func sniff(b []byte) protocol {
	n := min(len(b), sniffLen)
	switch {
	case string(b[:n]) != Preface[:n]:
		return http1
	case n == sniffLen:
		return HTTP2
	}
	return undecided
}

// SplitOptions bound the sorting of connections.
type SplitOptions struct {
	// HeadTimeout is the longest wait for a connection's first bytes,
	// from its accept; a client silent that long is disconnected. Must be > 0.
	HeadTimeout time.Duration
	// MaxPending is the number of connections being sorted at once; while
	// that many are, Accept waits (the kernel's backlog holds the rest).
	// Must be > 0.
	MaxPending int
}

// Split sorts the connections of one listener into two: HTTP1 and HTTP2.
// Each connection is read (up to four bytes) on its own goroutine, so a
// slow client delays nobody else. New starts nothing; Run accepts. Closing
// either listener closes the one underneath: no new connection is taken
// on either protocol.
type Split struct {
	ln   net.Listener
	opts SplitOptions
	h1   *sortedListener
	h2   *sortedListener
	sem  chan struct{} // one token per connection being sorted

	closeOnce sync.Once
	done      chan struct{} // closed when the listener underneath is
}

// NewSplit builds a Split of ln.
func NewSplit(ln net.Listener, opts SplitOptions) *Split {
	s := &Split{ln: ln, opts: opts, sem: make(chan struct{}, max(opts.MaxPending, 1)), done: make(chan struct{})}
	s.h1 = &sortedListener{s: s, ch: make(chan net.Conn)}
	s.h2 = &sortedListener{s: s, ch: make(chan net.Conn)}
	return s
}

// http1 is the listener of the connections that are not HTTP/2.
func (s *Split) HTTP1() net.Listener { return s.h1 }

// HTTP2 is the listener of the connections that start with the preface.
func (s *Split) HTTP2() net.Listener { return s.h2 }

// Close closes the listener underneath (both sides stop accepting).
func (s *Split) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.ln.Close()
		close(s.done)
	})
	return err
}

// Run accepts until the listener is closed; it returns nil then, or the
// error that stopped it (and closes the Split). Temporary errors (out of
// file descriptors) are retried after a pause, as net/http does.
func (s *Split) Run() error {
	var pause time.Duration
	for {
		select {
		case s.sem <- struct{}{}:
		case <-s.done:
			return nil
		}
		c, err := s.ln.Accept()
		if err == nil {
			pause = 0
			go s.sort(c)
			continue
		}
		<-s.sem
		select {
		case <-s.done:
			return nil
		default:
		}
		if temporary(err) {
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			time.Sleep(pause)
			continue
		}
		_ = s.Close()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		return err
	}
}

// temporary reports whether an Accept error may go away by itself.
func temporary(err error) bool {
	var t interface{ Temporary() bool }
	var to interface{ Timeout() bool }
	return errors.As(err, &t) && t.Temporary() || errors.As(err, &to) && to.Timeout()
}

// sort reads the first bytes of c and hands it to its side.
func (s *Split) sort(c net.Conn) {
	defer func() { <-s.sem }()
	var buf [sniffLen]byte
	n, p := 0, undecided
	_ = c.SetReadDeadline(time.Now().Add(s.opts.HeadTimeout))
	for p == undecided {
		m, err := c.Read(buf[n:])
		n += m
		if p = sniff(buf[:n]); p == undecided && err != nil {
			_ = c.Close() // silent, gone, or too slow: nothing to answer
			return
		}
	}
	_ = c.SetReadDeadline(time.Time{}) // each server sets its own
	pc := &prefixConn{Conn: c, prefix: append([]byte(nil), buf[:n]...)}
	side := s.h1
	if p == HTTP2 {
		side = s.h2
	}
	select {
	case side.ch <- pc:
	case <-s.done:
		_ = c.Close()
	}
}

// sortedListener hands out the connections of one side.
type sortedListener struct {
	s  *Split
	ch chan net.Conn
}

func (l *sortedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.s.done:
		return nil, net.ErrClosed
	}
}

func (l *sortedListener) Close() error   { return l.s.Close() }
func (l *sortedListener) Addr() net.Addr { return l.s.ln.Addr() }

// prefixConn gives back the bytes Split read before the rest of the
// connection. It owns the prefix; reads are the server's one goroutine.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// Turn implements busypoll.Turner: once the prefix is read, the socket
// underneath takes the turn.
func (c *prefixConn) Turn(w, r []byte) (int, error, error) {
	if len(c.prefix) == 0 {
		return busypoll.Turn(c.Conn, w, r)
	}
	if _, err := c.Write(w); err != nil {
		return 0, err, nil
	}
	n, err := c.Read(r)
	return n, nil, err
}

// SyscallConn exposes the socket underneath (busy polling, peeks at the
// peer), when there is one. A peek sees only what Split has not read,
// which a server has consumed before it would peek.
func (c *prefixConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}
