package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func writeKubeconfig(t *testing.T, dir, name, current string, servers map[string]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: " + current + "\nclusters:\n")
	for ctx, server := range servers {
		b.WriteString("- name: " + ctx + "\n  cluster:\n    server: " + server + "\n")
	}
	b.WriteString("contexts:\n")
	for ctx := range servers {
		b.WriteString("- name: " + ctx + "\n  context:\n    cluster: " + ctx + "\n    user: " + ctx + "\n")
	}
	b.WriteString("users:\n")
	for ctx := range servers {
		b.WriteString("- name: " + ctx + "\n  user:\n    token: t-" + ctx + "\n")
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRESTConfigAsKubectl: the config is found as kubectl finds it: a
// $KUBECONFIG list merged (the first file's current context wins), a
// context chosen by name, ~/.kube/config without $KUBECONFIG, an explicit
// file before all; an unknown context is an error naming it.
func TestRESTConfigAsKubectl(t *testing.T) {
	dir := t.TempDir()
	a := writeKubeconfig(t, dir, "a", "alpha", map[string]string{"alpha": "https://alpha.example:6443"})
	b := writeKubeconfig(t, dir, "b", "beta", map[string]string{"beta": "https://beta.example:6443"})
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	homeFile := writeKubeconfig(t, filepath.Join(home, ".kube"), "config", "home", map[string]string{"home": "https://home.example:6443"})
	defer func(f string) { clientcmd.RecommendedHomeFile = f }(clientcmd.RecommendedHomeFile)
	clientcmd.RecommendedHomeFile = homeFile // ~/.kube/config, read once at start

	host := func(kubeconfig, ctx string) string {
		t.Helper()
		cfg, err := RESTConfigFor(kubeconfig, ctx, "test")
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Host
	}
	t.Setenv("KUBECONFIG", a+string(os.PathListSeparator)+b)
	if got := host("", ""); got != "https://alpha.example:6443" {
		t.Errorf("KUBECONFIG list, current context: %s, want alpha's", got)
	}
	if got := host("", "beta"); got != "https://beta.example:6443" {
		t.Errorf("KUBECONFIG list, --context beta: %s, want beta's", got)
	}
	if got := host(b, ""); got != "https://beta.example:6443" {
		t.Errorf("--kubeconfig b: %s, want beta's", got)
	}
	if _, err := RESTConfigFor("", "gamma", "test"); err == nil || !strings.Contains(err.Error(), "gamma") {
		t.Errorf("unknown context: %v, want an error naming it", err)
	}
	t.Setenv("KUBECONFIG", "")
	if got := host("", ""); got != "https://home.example:6443" {
		t.Errorf("no KUBECONFIG: %s, want ~/.kube/config's", got)
	}
}
