package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BASELINE_REF=<git ref> adds the activator and the queue-proxy built from
// that commit to the warm bench as targets of their own, run in the same
// alternating rounds as this tree's: a change (the h2c listener's protocol
// detection, say) is judged by ratios measured side by side on the same
// noisy machine, not against numbers from another day.

// refSuffix names the targets and binaries of the BASELINE_REF build.
const refSuffix = "@ref"

// buildRef builds ./cmd/activator and ./cmd/queueproxy at ref into e.dir
// (as "activator@ref" and "queueproxy@ref"), from a `git archive` of the
// commit in a temporary directory; it returns the commit's short hash.
func buildRef(ctx context.Context, e *env, ref string) (string, error) {
	hash, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", ref+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("BASELINE_REF=%q: not a commit of this repository (%v); fix: give a branch, tag or hash", ref, err)
	}
	src := filepath.Join(e.dir, "ref-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git archive --format=tar "$1" | tar -x -C "$2"`, "sh", ref, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("extracting BASELINE_REF=%q: %v\n%s", ref, err, out)
	}
	for _, b := range []struct{ name, pkg string }{{"activator", "./cmd/activator"}, {"queueproxy", "./cmd/queueproxy"}} {
		path := filepath.Join(e.dir, b.name+refSuffix)
		build := exec.CommandContext(ctx, "go", "build", "-o", path, b.pkg)
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s at BASELINE_REF=%q: %v\n%s", b.pkg, ref, err, out)
		}
		e.bin[b.name+refSuffix] = path
	}
	return strings.TrimSpace(string(hash)), nil
}
