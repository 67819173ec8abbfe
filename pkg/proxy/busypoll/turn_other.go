//go:build !linux

package busypoll

import "net"

// turnTCP writes, then reads: off Linux the poller is left as it is.
func turnTCP(c *net.TCPConn, w, r []byte) (int, error, error) { return plainTurn(c, w, r) }
