package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDocsUpToDate fails when docs/configuration.md differs from what the
// key and annotation tables generate.
func TestDocsUpToDate(t *testing.T) {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatalf("reading docs/configuration.md (regenerate: go run ./hack/configdocs > docs/configuration.md): %v", err)
	}
	if diff := cmp.Diff(b.String(), string(got)); diff != "" {
		t.Errorf("docs/configuration.md is stale; run: go run ./hack/configdocs > docs/configuration.md\n(-want +got):\n%s", diff)
	}
}
