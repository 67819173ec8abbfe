package main

import (
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// A request spends at least the asked CPU time, and not wildly more.
func TestRequestBurnsCPU(t *testing.T) {
	h := handler(30 * time.Millisecond)
	before := processCPU(t)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	used := processCPU(t) - before
	if rec.Code != http.StatusOK || rec.Body.String() != "OK!" {
		t.Errorf("answer %d %q, want 200 OK!", rec.Code, rec.Body.String())
	}
	if used < 30*time.Millisecond || used > 300*time.Millisecond {
		t.Errorf("a 30ms request used %v of CPU", used)
	}
}

func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
