package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckRecordDir(t *testing.T) {
	root := t.TempDir()
	manifests := filepath.Join(root, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "hello.yaml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(manifests, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, record, manifests string
		refused                 bool
	}{
		{name: "no recording", record: "", manifests: manifests},
		{name: "elsewhere", record: filepath.Join(root, "rec"), manifests: manifests},
		{name: "a sibling with the same prefix", record: manifests + "-rec", manifests: manifests},
		{name: "the parent of the manifests", record: root, manifests: manifests},
		{name: "beside a manifest file", record: root, manifests: file},
		{name: "the manifest directory", record: manifests, manifests: manifests, refused: true},
		{name: "the manifest directory, spelled differently", record: manifests + "/./", manifests: manifests, refused: true},
		{name: "inside it, not yet created", record: filepath.Join(manifests, "rec", "deeper"), manifests: manifests, refused: true},
		{name: "the second of two", record: manifests, manifests: file + "," + manifests, refused: true},
		{name: "through a symbolic link", record: filepath.Join(link, "rec"), manifests: manifests, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRecordDir(tt.record, tt.manifests)
			if (err != nil) != tt.refused {
				t.Fatalf("checkRecordDir(%q, %q) = %v, want refused %v", tt.record, tt.manifests, err, tt.refused)
			}
			if err != nil {
				for _, want := range []string{"--record", "--manifests", "outside the manifests"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
			}
		})
	}
}

// TestRunRefusesRecordingIntoManifests: `autoscaler run` exits with status
// 2 and says why before it starts anything.
func TestRunRefusesRecordingIntoManifests(t *testing.T) {
	dir := t.TempDir()
	var out, errOut strings.Builder
	code := runRun([]string{"--manifests", dir, "--record", dir, "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"},
		streams{in: strings.NewReader(""), out: &out, err: &errOut})
	if code != 2 || !strings.Contains(errOut.String(), "--record "+dir+" is inside --manifests "+dir) {
		t.Errorf("autoscaler run --record into --manifests: status %d, stderr %q; want 2 and the reason", code, errOut.String())
	}
}

// TestRunRefusesNoLearnedSaveInterval: a save interval of 0 is refused
// before anything starts (it must be > 0: there is no "never").
func TestRunRefusesNoLearnedSaveInterval(t *testing.T) {
	var out, errOut strings.Builder
	code := runRun([]string{"--manifests", t.TempDir(), "--learned-save-interval", "0s", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"},
		streams{in: strings.NewReader(""), out: &out, err: &errOut})
	if code != 2 || !strings.Contains(errOut.String(), "--learned-save-interval 0s: must be > 0") {
		t.Errorf("status %d, stderr %q; want 2 and the reason", code, errOut.String())
	}
}
