package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestProxySecretFile: the secret is read from the file (white space
// trimmed) at start; an empty, missing or invalid file, or a secret given
// both ways, is an error naming the variable; a change to the file reaches
// the activator, a broken file leaves the current secret.
func TestProxySecretFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("install-secret-0123456789\n")
	cfg := &config{ProxySecretFile: path}
	if err := loadProxySecretFile(cfg); err != nil || cfg.Activator.ProxySecret != "install-secret-0123456789" {
		t.Fatalf("got %q, %v", cfg.Activator.ProxySecret, err)
	}
	if err := loadProxySecretFile(cfg); err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("a secret given both ways: %v", err)
	}
	for _, bad := range []string{"", "short", "has a space in it 0123456789"} {
		write(bad)
		if err := loadProxySecretFile(&config{ProxySecretFile: path}); err == nil || !strings.Contains(err.Error(), "ACTIVATOR_PROXY_SECRET_FILE") {
			t.Errorf("file %q: %v", bad, err)
		}
	}
	if err := loadProxySecretFile(&config{ProxySecretFile: filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing file was accepted")
	}

	write("install-secret-0123456789")
	var mu sync.Mutex
	var got []string
	set := func(s string) error {
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 || got[len(got)-1] != s {
			got = append(got, s)
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); followProxySecret(ctx, path, 5*time.Millisecond, set, zap.NewNop()) }()
	seen := func(want ...string) bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(got, ",") == strings.Join(want, ",")
	}
	wait := func(want ...string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !seen(want...); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("secrets given %q, want %q", got, want)
			}
		}
	}
	wait("install-secret-0123456789")
	write("bad")
	time.Sleep(30 * time.Millisecond)
	write("install-secret-rotated-0123")
	wait("install-secret-0123456789", "install-secret-rotated-0123")
	cancel()
	<-done
}
