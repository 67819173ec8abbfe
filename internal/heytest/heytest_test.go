package heytest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	out := []byte(`Summary:
  Total:	8.0123 secs
  Requests/sec:	120.3

Status code distribution:
  [200]	950 responses
  [502]	3 responses

Error distribution:
  [2]	Get "http://127.0.0.1:1/": dial tcp 127.0.0.1:1: connect: connection refused
`)
	got := Parse(out)
	want := Result{Codes: map[int]int{200: 950, 502: 3}, Total: 953,
		Errors: []string{`[2]	Get "http://127.0.0.1:1/": dial tcp 127.0.0.1:1: connect: connection refused`}, Output: out}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}
