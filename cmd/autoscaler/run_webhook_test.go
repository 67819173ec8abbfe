package main

import (
	"flag"
	"strings"
	"testing"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/stats"
)

// TestWebhookImageFromEnv: the injected queue-proxy image comes from
// QUEUE_PROXY_IMAGE (what deploy/ sets, and kustomize's images rewrite),
// a flag overrides it, and without either --webhook is refused, naming
// both; there is no default image. The proxy secret's Secret is
// stats.ProxySecretName unless given.
func TestWebhookImageFromEnv(t *testing.T) {
	parse := func(env string, args ...string) *kubeFlags {
		t.Helper()
		t.Setenv(config.EnvQueueProxyImage, env)
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		k := addKubeFlags(fs)
		if err := fs.Parse(append([]string{"--webhook=:8443"}, args...)); err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := parse("registry.example/ebb/queueproxy:v1@sha256:0123")
	if k.webhook.image != "registry.example/ebb/queueproxy:v1@sha256:0123" || k.webhook.check("kubernetes") != nil {
		t.Errorf("image %q, check %v: want the variable's", k.webhook.image, k.webhook.check("kubernetes"))
	}
	if k.proxySecret != stats.ProxySecretName {
		t.Errorf("--proxy-secret %q, want %q", k.proxySecret, stats.ProxySecretName)
	}
	if k := parse("from-env:1", "--webhook-image=from-flag:2"); k.webhook.image != "from-flag:2" {
		t.Errorf("image %q: want the flag's", k.webhook.image)
	}
	k = parse("")
	err := k.webhook.check("kubernetes")
	if err == nil || !strings.Contains(err.Error(), "--webhook-image") || !strings.Contains(err.Error(), config.EnvQueueProxyImage) {
		t.Errorf("no image: %v; want an error naming --webhook-image and %s", err, config.EnvQueueProxyImage)
	}
}
