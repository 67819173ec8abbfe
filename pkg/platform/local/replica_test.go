package local

import (
	"slices"
	"testing"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/stats"
)

// TestQueueProxyEnv: a replica's queue-proxy listens on loopback only and
// gets its namespace's proxy secret, derived from the platform's, a fresh random one per platform unless
// given.
func TestQueueProxyEnv(t *testing.T) {
	p1, err := New(Options{Paths: []string{"x"}, QueueProxy: "qp"})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := New(Options{Paths: []string{"x"}, QueueProxy: "qp"})
	if err != nil {
		t.Fatal(err)
	}
	if err := stats.ValidateProxySecret(p1.ProxySecret()); err != nil || p1.ProxySecret() == "" {
		t.Errorf("generated secret %q: %v", p1.ProxySecret(), err)
	}
	if p1.ProxySecret() == p2.ProxySecret() {
		t.Errorf("two platforms share the secret %q, want one per run", p1.ProxySecret())
	}
	env := p1.queueProxyEnv(revSpec{key: autoscaler.RevisionKey{Namespace: "team-a", Name: "x"}}, &replica{name: "r"})
	for _, want := range []string{"QUEUE_BIND_ADDRESS=127.0.0.1", stats.ProxySecretEnv + "=" + stats.NamespaceProxySecret(p1.ProxySecret(), "team-a")} {
		if !slices.Contains(env, want) {
			t.Errorf("queue-proxy env %q lacks %q", env, want)
		}
	}

	given, err := New(Options{Paths: []string{"x"}, QueueProxy: "qp", ProxySecret: "given-secret-0123456789"})
	if err != nil || given.ProxySecret() != "given-secret-0123456789" {
		t.Errorf("given secret: got %q, %v", given.ProxySecret(), err)
	}
	if _, err := New(Options{Paths: []string{"x"}, QueueProxy: "qp", ProxySecret: "short"}); err == nil {
		t.Error("New accepted a 5-byte secret")
	}
}
