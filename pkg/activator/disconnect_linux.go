//go:build linux

package activator

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"
)

// Linux TCP states (include/net/tcp_states.h): a peer that sent FIN
// leaves the socket in CLOSE_WAIT; one that sent RST, in CLOSE.
const (
	tcpClose     = 7
	tcpCloseWait = 8
)

// canPeek reports whether clientGone can look at c.
func canPeek(c net.Conn) bool {
	_, ok := c.(syscall.Conn)
	return ok
}

// clientGone reports whether the peer of c has closed the connection (or
// reset it), without reading from it or blocking: a one-byte recv with
// MSG_PEEK|MSG_DONTWAIT. Nothing to read (EAGAIN) means alive; end of file
// or a reset means gone. Bytes waiting (the rest of a body, a pipelined
// request) hide an end of file behind them, so then the TCP state says
// whether the client closed after sending them. buf is scratch space of at
// least one byte. Anything unexpected counts as alive: the queue timeout
// still bounds the wait.
func clientGone(c net.Conn, buf []byte) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	// Control, not Read: both keep the descriptor open while f runs, but
	// Read also takes the connection's read lock, and a stale entry of a
	// scan may be a connection whose request has moved on and now blocks
	// in a read (its body, or the next request): the check would wait
	// behind it. A peek needs no lock: it consumes nothing.
	gone := false
	err = rc.Control(func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), buf[:1], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil && n == 0: // end of file: the client closed
			gone = true
		case err == nil: // bytes waiting
			gone = closedAfterData(int(fd))
		default:
			gone = errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ETIMEDOUT)
		}
	})
	return err == nil && gone
}

// closedAfterData reads the TCP state of fd: the client sent FIN or RST.
// (tcp_info starts with the state byte; the kernel copies as much of the
// struct as asked for.)
func closedAfterData(fd int) bool {
	v, err := syscall.GetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_INFO)
	if err != nil {
		return false // not TCP (a Unix socket): no way to tell
	}
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], uint32(v))
	return b[0] == tcpCloseWait || b[0] == tcpClose
}
