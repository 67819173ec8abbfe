package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// checkRecordDir refuses a --record directory that is a --manifests
// directory or inside one: the local platform reads every *.json file of a
// manifest directory, so it would read its own recordings as manifests.
func checkRecordDir(record, manifests string) error {
	if record == "" {
		return nil
	}
	rec := canonical(record)
	for _, m := range strings.Split(manifests, ",") {
		if fi, err := os.Stat(m); err != nil || !fi.IsDir() {
			continue // a file, or missing (the platform reports it)
		}
		rel, err := filepath.Rel(canonical(m), rec)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		return fmt.Errorf("--record %s is inside --manifests %s: the local platform would read the recordings as manifests; "+
			"record into a directory outside the manifests (for example --record %s)", record, m,
			filepath.Join(os.TempDir(), "ebb-recordings"))
	}
	return nil
}

// canonical is path made absolute, with symbolic links resolved as far as
// it exists.
func canonical(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if dir == filepath.Dir(dir) {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}
