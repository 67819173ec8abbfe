package fastserve

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLoggerAtDebug(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	Logger(zap.New(core)).Printf("error when serving connection %q: %v", "1.2.3.4", "bad request")
	all := logs.All()
	if len(all) != 1 || all[0].Level != zapcore.DebugLevel || all[0].Message != "fasthttp server" ||
		all[0].ContextMap()["detail"] != `error when serving connection "1.2.3.4": bad request` {
		t.Fatalf("logged %+v, want one Debug \"fasthttp server\" with the formatted detail", all)
	}
	quiet, none := observer.New(zapcore.InfoLevel)
	Logger(zap.New(quiet)).Printf("x %d", 1)
	if none.Len() != 0 {
		t.Fatalf("logged %d entries above Debug, want none", none.Len())
	}
}

// TestCloseListenerAfterEarlyShutdown: a Shutdown that comes before Serve
// registered its listener leaves Serve accepting; CloseListener ends it.
func TestCloseListenerAfterEarlyShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: func(*fasthttp.RequestCtx) {}}
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	select {
	case err := <-served:
		t.Logf("Serve returned at once (%v): fasthttp refuses a Serve after Shutdown here", err)
		return
	case <-time.After(100 * time.Millisecond):
	}
	CloseListener(ln)
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still accepting 5 s after CloseListener")
	}
}
