package main

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// fakeRepo is a repository of the given files and contents.
func fakeRepo(files map[string]string) *repo {
	var names []string
	for f := range files {
		names = append(names, f)
	}
	slices.Sort(names)
	return newRepo(names, func(p string) ([]byte, error) {
		s, ok := files[p]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	})
}

// TestCheck: every spelling of a path outside the repository is caught, in
// Go comments, Markdown and # comments, with its file and line; the
// repository's own files (from the root, from the file's directory, as the
// end of a path), other projects' files named as theirs, module paths,
// URLs, placeholders, examples and string literals are not.
func TestCheck(t *testing.T) {
	r := fakeRepo(map[string]string{
		"docs/knative.md": "# Knative\n\n## 3. Targets\n\ntext\n",
		"docs/other.md":   "see [knative.md](knative.md) and ../README.md and knative.md §3",
		"README.md":       "Run `make run`; see docs/knative.md, pkg/manifest/inject/testdata/hello.yaml.\n\nAcross the runs of this session it held.",
		"pkg/manifest/inject/testdata/hello.yaml": "# the pod of ../../../deploy/x.yaml, read by ../patch.go\nkind: Pod\n",
		"pkg/manifest/inject/patch.go":            "package inject\n",
		"hack/run.sh":                             "#!/bin/sh\n# traces in ../shared/traces/azure2019\necho \"${#x}\" # a ${#x} is no comment; /work/ebb in one is\n",
		"Makefile":                                "# see /home/me/notes.md\nTRACE ?= ../shared/traces\n",
		"cmd/x/main.go":                           cmdMain,
		"pkg/scaling/decider/doc.go":              "// Package decider: the semantics of the shared reference hpa.md.\npackage decider\n",
		"pkg/config/hpa/doc.go":                   "// Package hpa: its API is the contract of spec/hpa-behavior-api.md.\npackage hpa\n",
		"cmd/autoscaler/testdata/empty.txt":       "",
	})
	var got []string
	for _, f := range check(r) {
		got = append(got, f.String())
	}
	want := []string{
		`README.md:3: "this session" speaks of the work`,
		`Makefile:1: "/home/me/notes.md" is a path on a machine`,
		`cmd/x/main.go:3: "STYLE" speaks of the work`,
		`cmd/x/main.go:3: "STYLE.md" is not a Markdown file of the repository`,
		`cmd/x/main.go:4: "STYLE" speaks of the work`,
		`cmd/x/main.go:5: "/work/shared/spec/validate-output.md" is a path on a machine`,
		`cmd/x/main.go:6: "spec/validate-output.md" is not a file of the repository`,
		`cmd/x/main.go:7: "shared/reference/hpa.md" is not a file of the repository`,
		`cmd/x/main.go:8: "docs/knative.md" §3.1: docs/knative.md has no such section`,
		`cmd/x/main.go:9: "../../../elsewhere/x.go" leaves the repository`,
		`cmd/x/main.go:10: "internal/gone.go" is not a file of the repository, and the text does not say whose it is`,
		`hack/run.sh:2: "../shared/traces/azure2019" leaves the repository`,
		`hack/run.sh:3: "/work/ebb" is a path on a machine`,
		`pkg/scaling/decider/doc.go:1: "the shared reference" speaks of the work`,
		`pkg/scaling/decider/doc.go:1: "hpa.md" is not a Markdown file of the repository`,
		`pkg/config/hpa/doc.go:1: "spec/hpa-behavior-api.md" is not a file of the repository`,
		`pkg/manifest/inject/testdata/hello.yaml:1: "../../../deploy/x.yaml" is not a file of the repository`,
	}
	if len(got) != len(want) {
		t.Errorf("%d findings, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no finding %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, "docs/other.md") }) {
		t.Errorf("docs/other.md's links to its neighbour and its section reported:\n%s", strings.Join(got, "\n"))
	}
}

const cmdMain = `package main

// Logged below Info, as STYLE.md says.
// As STYLE says.
// The contract: /work/shared/spec/validate-output.md.
// The contract: spec/validate-output.md.
// Digested in shared/reference/hpa.md.
// See docs/knative.md §3.1 (it has §3 only).
// Above the root: ../../../elsewhere/x.go.
// As internal/gone.go does.
// Fine: Knative's pkg/queue/breaker.go, Go's net/http/transport.go,
// github.com/valyala/fasthttp/server.go, https://example.com/STYLE.md/x,
// FILE.svg, DIR/NAME.json, out.yaml, .golden.jsonl, doc.go, docs/knative.md §3,
// inject/testdata/hello.yaml, ~/.cache/ebb-testbed, /proc/self/stat.
func main() { _ = "spec/validate-output.md in a string is not a comment" }
`
