//go:build !linux

package proxycore

import "net"

// CanPeek reports whether Peek can look at c: never, off Linux.
func CanPeek(net.Conn) bool { return false }

// Peek is not implemented off Linux: every peer looks alive. A request
// then finds a closed pooled connection by writing to it (and, if the
// retry rule does not let it be sent again, gets an error); the
// activator's queued requests whose client left wait until their deadline.
// Bytes an upstream left on an idle connection are found only when they
// were read with its last answer (Trip's release).
func Peek(net.Conn, []byte) Peer { return peerAlive }

func (k *peeker) run(net.Conn) Peer { return peerAlive }

func (k *peeker) look(uintptr) {}
