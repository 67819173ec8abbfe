package testnet

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// WaitClosed reads c until the server closes it, failing the test if it
// is still open after 10 s.
func WaitClosed(t testing.TB, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection %s still open after 10s", c.LocalAddr())
	}
}

// IdleClosedAfterOne sends one GET / to host on c, wants a keep-alive 200,
// then sends nothing more and waits for the server to close c (its idle
// timeout).
func IdleClosedAfterOne(t testing.TB, c net.Conn, host string) {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("first request = %v, %v; want a keep-alive 200", resp, err)
	}
	resp.Body.Close()
	WaitClosed(t, c)
}
