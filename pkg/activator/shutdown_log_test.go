package activator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestShutdownLogsItsReason: the end of Run's context is a clean shutdown;
// the log says "shutting down" with the context's cause as the reason
// (signal.NotifyContext's "interrupt signal received" on Ctrl-C), not that
// something failed.
func TestShutdownLogsItsReason(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	h := newHarness(t, func(o *Options) { o.Logger = zap.New(core) })
	h.stop()
	h.stop = nil
	var got []string
	for _, e := range logs.FilterMessage("shutting down").All() {
		got = append(got, e.ContextMap()["reason"].(string))
	}
	if diff := cmp.Diff([]string{"context canceled"}, got); diff != "" {
		t.Errorf("reasons of the \"shutting down\" entries (-want +got):\n%s\nall entries: %v", diff, logs.All())
	}
}
