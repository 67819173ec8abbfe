//go:build !linux

package activator

import "net"

// wrap leaves connections as they are: busy polling is Linux only.
func (b *busyPoll) wrap(c net.Conn) net.Conn { return c }
