//go:build linux

package proxycore

import (
	"encoding/binary"
	"net"
	"syscall"
	"unsafe"
)

// Linux TCP states (include/net/tcp_states.h): a peer that sent FIN
// leaves the socket in CLOSE_WAIT; one that sent RST, in CLOSE.
const (
	tcpClose     = 7
	tcpCloseWait = 8
)

// CanPeek reports whether Peek can look at c (a socket).
func CanPeek(c net.Conn) bool {
	_, ok := c.(syscall.Conn)
	return ok
}

// Peek says what the peer of c has done, without reading or blocking: a
// one-byte recv with MSG_PEEK|MSG_DONTWAIT. Nothing to read (EAGAIN) is
// PeerAlive; end of file, a reset or a timed-out connection is PeerClosed.
// Bytes waiting hide an end of file behind them, so then the TCP state
// says whether the peer closed after sending them (PeerSentThenClosed) or
// not (PeerSent). buf is scratch space of at least one byte. Anything
// unexpected, and connections that are not sockets, are PeerAlive.
//
// Control, not Read: both keep the descriptor open while f runs, but Read
// also takes the connection's read lock, and a connection may be blocked
// in a read elsewhere (the activator's client watch): the peek would wait
// behind it. A peek consumes nothing, so it needs no lock.
func Peek(c net.Conn, buf []byte) Peer {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return peerAlive
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return peerAlive
	}
	p := peerAlive
	if err := rc.Control(func(fd uintptr) { p = peekFD(fd, buf) }); err != nil {
		return peerAlive
	}
	return p
}

// peekFD is Peek's look at the socket fd: recv(2) with MSG_PEEK and
// MSG_DONTWAIT as a raw system call. It never blocks, so, as busypoll's
// reads, it need not tell the runtime (a plain call before every request
// would wake the runtime's monitor thread, pkg/proxy/busypoll/rawio_linux.go).
// buf is the caller's own scratch byte.
func peekFD(fd uintptr, buf []byte) Peer {
	r, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	switch {
	case e == 0 && r == 0:
		return PeerClosed
	case e == 0 && closedAfterData(int(fd)):
		return PeerSentThenClosed
	case e == 0:
		return peerSent
	case e == syscall.ECONNRESET || e == syscall.ETIMEDOUT:
		return PeerClosed
	}
	return peerAlive
}

// run is peeker.peek on Linux: Peek with the peeker's bound callback.
// A connection that keeps its RawConn (busypoll's) hands it out without
// allocating.
func (k *peeker) run(c net.Conn) Peer {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return peerAlive
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return peerAlive
	}
	k.got = peerAlive
	if err := rc.Control(k.step); err != nil {
		return peerAlive
	}
	return k.got
}

func (k *peeker) look(fd uintptr) { k.got = peekFD(fd, k.buf[:]) }

// closedAfterData reads the TCP state of fd: the peer sent FIN or RST.
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
