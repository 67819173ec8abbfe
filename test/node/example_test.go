//go:build node

package node

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestExampleApp: the example app as make deploy installs it
// (default/hello, the short form: the webhook injects the queue-proxy)
// goes to zero by itself under the default settings, and a request
// through the activator's Service wakes it: 200.
func TestExampleApp(t *testing.T) {
	// config-autoscaler's default stable window (60 s) plus the suite's
	// grace period and the drain.
	waitZero(t, "default", "hello", 240*time.Second)
	code, ttfb, err := get(context.Background(), env.activator, host("default", "hello"), 60*time.Second)
	if err != nil || code != 200 {
		t.Fatalf("wake of default/hello through the activator's Service: %d %v", code, err)
	}
	fmt.Printf("node: the example app woken from zero: 200, first byte after %v (its app answers in 100 ms)\n", ms(ttfb))
	waitState(t, "default", "hello", 30*time.Second, "one ready pod", func(s state) bool { return s.ready == 1 })
}
