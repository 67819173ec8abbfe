// Package golden compares what a test produced with a golden file, or
// rewrites the file when the tests run with -update. The flag is defined
// here, once, for every package whose tests import it.
package golden

import (
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files the tests compare with")

// Updating reports whether this test run rewrites golden files (-update).
func Updating() bool { return *update }

// Check compares got with the file at path; with -update it writes got
// there instead.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}
