//go:build linux

package proxycore

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether the peer of an idle pooled connection has
// closed or reset it, without reading or blocking: a one-byte recv with
// MSG_PEEK|MSG_DONTWAIT. Nothing to read (EAGAIN) means alive. Bytes
// waiting on an idle connection are the peer's error, and count as closed
// too: the connection must not carry a request. Anything else, and
// connections that are not sockets, count as alive.
//
// It costs a syscall and two small allocations (the raw connection and the
// callback), so it runs only for requests the retry rule would not let us
// send again.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	err = rc.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = err == nil || errors.Is(err, syscall.ECONNRESET)
	})
	return err == nil && closed
}
