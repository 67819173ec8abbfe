//go:build linux && race

package busypoll

import "syscall"

// Under the race detector, reads and writes are the syscall package's:
// its annotations of the buffers and of the order of I/O between
// goroutines are the detector's only view of them.

func rawRead(fd uintptr, p []byte) (int, syscall.Errno) { return errno(syscall.Read(int(fd), p)) }

func rawWrite(fd uintptr, p []byte) (int, syscall.Errno) { return errno(syscall.Write(int(fd), p)) }

func errno(n int, err error) (int, syscall.Errno) {
	if err != nil {
		return 0, err.(syscall.Errno)
	}
	return n, 0
}
