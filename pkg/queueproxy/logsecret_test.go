package queueproxy

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestMalformedHeadNotLogged: a malformed request head is answered 400 and
// logged (at Debug) without its contents: its Authorization never reaches
// the log, whatever the level.
func TestMalformedHeadNotLogged(t *testing.T) {
	const secret = "TOPSECRET-credential-4711"
	core, logs := observer.New(zapcore.DebugLevel)
	q, err := New(testConfig(t, nil), zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = q.serving.Serve(ln) }()
	t.Cleanup(func() { _ = q.serving.Shutdown() })

	for _, head := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + secret + "\r\nno colon here\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + secret + "\r\nContent-Length: zz\r\n\r\n",
		"G\x00T / HTTP/1.1\r\nAuthorization: Bearer " + secret + "\r\n\r\n",
	} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, head)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		answer, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(answer), "HTTP/1.1 400") {
			t.Errorf("answer to %q = %q, want 400", head, answer)
		}
	}
	waitUntil(t, func() bool { return logs.FilterMessage("fasthttp").Len() >= 3 })
	for _, e := range logs.All() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		if strings.Contains(line, secret) {
			t.Errorf("log entry at %v holds the secret: %s", e.Level, line)
		}
		if e.Message == "fasthttp" && e.Level > zapcore.DebugLevel {
			t.Errorf("fasthttp's per-connection message logged at %v, want Debug: %s", e.Level, line)
		}
	}
}
