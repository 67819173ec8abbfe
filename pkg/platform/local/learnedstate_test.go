package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// TestLearnedFiles: states round-trip through their files (a new store on
// the same directory is a restart), a newer save replaces the older one
// and leaves no temporary file, a revision never saved loads nothing, and
// an oversized file is read only up to one byte past any state.
func TestLearnedFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := NewLearnedFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hello := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
	other := autoscaler.RevisionKey{Namespace: "team-a", Name: "other.v2"}
	if err := s.Save(ctx, map[autoscaler.RevisionKey][]byte{hello: {1}, other: {2, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, map[autoscaler.RevisionKey][]byte{hello: {4, 5, 6}}); err != nil {
		t.Fatal(err)
	}
	restarted, err := NewLearnedFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[autoscaler.RevisionKey][]byte{hello: {4, 5, 6}, other: {2, 3}, {Namespace: "default", Name: "never"}: nil} {
		got, err := restarted.Load(ctx, k)
		if err != nil || !cmp.Equal(want, got) {
			t.Errorf("Load(%s) = %v, %v; want %v", k, got, err, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"default.hello.learned", "team-a.other.v2.learned"}, names); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	big := make([]byte, 10*decider.MaxLearnedStateSize)
	if err := os.WriteFile(filepath.Join(dir, "default.big.learned"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load(ctx, autoscaler.RevisionKey{Namespace: "default", Name: "big"}); err != nil || len(got) != decider.MaxLearnedStateSize+1 {
		t.Errorf("an oversized file: %d bytes, %v; want %d", len(got), err, decider.MaxLearnedStateSize+1)
	}
}
