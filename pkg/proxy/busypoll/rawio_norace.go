//go:build linux && !race

package busypoll

import "syscall"

// rawRead reads fd once, without telling the runtime (rawio_linux.go).
func rawRead(fd uintptr, p []byte) (int, syscall.Errno) { return sysRead(fd, p) }

// rawWrite writes p to fd once, without telling the runtime.
func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) { return sysWrite(fd, p) }
