package busypoll

import (
	"errors"
	"net"
)

// A turn is a proxy's write of a message to a peer that answers it (the
// last bytes of a request to an upstream) followed at once by the read
// of the answer. A plain read right after the write almost always finds
// nothing yet: one system call that comes up empty before the reader
// parks, a tenth of what a hop costs on a virtual machine where each
// call crosses into the hypervisor. Turn saves it.
//
// Go's poller forgets a socket's readiness at the start of each read and
// parks the reader until the socket signals again. A turn writes after
// that reset, within the read, and then waits for the signal without
// reading first: the answer can only arrive after the write, so its
// arrival wakes the reader. That holds only when the peer cannot have
// sent anything the reader has not read before the write begins: no
// answer to earlier bytes of the same message (write those with a plain
// Write and read with a plain Read), no request a client pipelined. A
// peer that closed the connection before the write resets it when the
// write reaches it, which signals too.

// turner is a connection with its own turn (a polling connection polls
// after the write; a wrapper hands the turn to the connection it wraps).
type turner interface {
	// Turn writes w whole, then reads into r as Read would. writeErr is
	// the write's failure (nothing was read); readErr the read's.
	Turn(w, r []byte) (n int, writeErr, readErr error)
}

// Turn writes w to c, then reads into r the first bytes the peer sends
// after it (see Turner). On Linux a TCP connection, or one that is a
// turner, waits for them without a read that comes up empty; any other
// connection writes, then reads.
func Turn(c net.Conn, w, r []byte) (n int, writeErr, readErr error) {
	switch t := c.(type) {
	case turner:
		return t.Turn(w, r)
	case *net.TCPConn:
		return turnTCP(t, w, r)
	}
	return plainTurn(c, w, r)
}

func plainTurn(c net.Conn, w, r []byte) (int, error, error) {
	if _, err := c.Write(w); err != nil {
		return 0, err, nil
	}
	n, err := c.Read(r)
	return n, nil, err
}

// notWrittenError is a turn's read error when the turn wrote nothing: the
// read's deadline had passed (or the connection was closed) before it
// began. It is the read's error as far as errors.Is goes.
type notWrittenError struct{ err error }

func (e notWrittenError) Error() string { return e.err.Error() + " (before the turn: nothing written)" }
func (e notWrittenError) Unwrap() error { return e.err }

// NotWritten reports whether a turn's read error came before its write:
// nothing of w was written, and a caller that still owes it (an answer
// held for the read of the next request) must write it itself. It runs
// after every turn of a client connection, so it allocates nothing (as
// errors.As would, for its target): it follows the chain of single
// wraps, the only way a turn's error is ever wrapped.
func NotWritten(readErr error) bool {
	for err := readErr; err != nil; err = errors.Unwrap(err) {
		if _, ok := err.(notWrittenError); ok {
			return true
		}
	}
	return false
}
