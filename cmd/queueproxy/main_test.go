package main

import (
	"strings"
	"testing"
)

// TestRunRejectsBadConfig: a bad value stops the binary at start with the
// variable, the value and the rule.
func TestRunRejectsBadConfig(t *testing.T) {
	t.Setenv("CONTAINER_CONCURRENCY", "lots")
	err := run([]string{"--user-port=70000"})
	if err == nil {
		t.Fatal("run: nil error")
	}
	for _, want := range []string{`environment variable "CONTAINER_CONCURRENCY" = "lots": must be an integer within [0, 10000]`,
		`flag "--user-port" = "70000": must be an integer within [1, 65535]`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
