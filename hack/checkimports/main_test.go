package main

import (
	"os"
	"testing"
)

// TestActivatorIsLean runs the activator's rule on the repository: the
// default-build activator links neither the typed clientset nor the
// informer factories (nor their scheme), so `go test ./...` guards it
// as well as `make check-imports`.
func TestActivatorIsLean(t *testing.T) {
	t.Chdir("../..")
	if _, err := os.Stat("go.mod"); err != nil {
		t.Fatal(err)
	}
	if problems := checkLeanK8s("cmd/activator"); len(problems) > 0 {
		for _, p := range problems {
			t.Error(p)
		}
	}
}

func TestHeavyDep(t *testing.T) {
	for dep, want := range map[string]string{
		"k8s.io/client-go/kubernetes":                    "k8s.io/client-go/kubernetes",
		"k8s.io/client-go/kubernetes/scheme":             "k8s.io/client-go/kubernetes",
		"k8s.io/client-go/informers/core/v1":             "k8s.io/client-go/informers",
		"k8s.io/client-go/kubernetesx":                   "",
		"k8s.io/client-go/rest":                          "",
		"k8s.io/client-go/listers/core/v1":               "",
		"ebb.dev/ebb/pkg/platform/kubernetes/activators": "",
	} {
		if got := heavyDep(dep); got != want {
			t.Errorf("heavyDep(%q) = %q, want %q", dep, got, want)
		}
	}
}
