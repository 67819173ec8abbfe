package main

import (
	"fmt"
	"regexp"
	"strings"
)

// The README's Layout section is this table, generated from the tree:
// every package of cmd/, pkg/ and internal/ with its layer (layerOf) and
// the role its doc comment gives in its first sentence, then the folders
// that hold no importable package. `go run ./hack/checkimports -layout`
// prints it; TestReadmeLayout fails when the README's copy differs.
const (
	layoutBegin = "<!-- layout: go run ./hack/checkimports -layout -->"
	layoutEnd   = "<!-- end of layout -->"
)

// otherFolders are the rows for folders without an importable package.
var otherFolders = [][2]string{
	{"test/", "end-to-end suites: k8s (the testbed), node (the real node), ledger (every request accounted for)"},
	{"bench/", "load tests and benchmarks against baselines measured in the same run"},
	{"hack/", "the tools of make: images, the testbed, the import and surface checks, the docs generator"},
	{"deploy/", "config-autoscaler.yaml, examples, local/ (what make run runs), kubernetes/ (Ebb on a cluster), grafana/, prometheus/"},
	{"docs/", "reference documentation"},
	{"testdata/", "golden scenarios"},
}

var rolePrefix = regexp.MustCompile(`^(Package|Command) \S+ (is )?`)

// role is the one-line role of a package: its synopsis without "Package
// X is", up to the first colon, parenthesis or semicolon.
func role(doc string) string {
	r := rolePrefix.ReplaceAllString(doc, "")
	for _, sep := range []string{": ", " (", "; "} {
		r, _, _ = strings.Cut(r, sep)
	}
	return strings.TrimRight(r, ".:")
}

// layerName is the Layout table's word for p's layer.
func layerName(p string) string {
	switch l := layerOf(p); {
	case programsOnly[p] != "":
		return l + ", programs only"
	case isPart(p) && l == layerComponent:
		return "component " + strings.TrimPrefix(component(p), "pkg/") + ", pure part"
	case isPart(p):
		return l + ", pure part"
	case l == layerComponent:
		return "component " + strings.TrimPrefix(component(p), "pkg/")
	case l == layerFoundation || l == layerCore:
		return l + " (pure)"
	default:
		return l
	}
}

// layoutTable renders the table for the packages of mod.
func layoutTable(mod map[string]pkgInfo) string {
	var b strings.Builder
	b.WriteString("| folder | layer | role |\n|---|---|---|\n")
	for _, p := range sortedKeys(mod) {
		top, _, _ := strings.Cut(p, "/")
		if top != "cmd" && top != "pkg" && top != "internal" {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p, layerName(p), role(mod[p].doc))
	}
	for _, f := range otherFolders {
		fmt.Fprintf(&b, "| `%s` | | %s |\n", f[0], f[1])
	}
	return b.String()
}

// readmeLayout is the table between the layout markers of readme, or an
// error naming what is missing.
func readmeLayout(readme string) (string, error) {
	_, after, ok := strings.Cut(readme, layoutBegin+"\n")
	if !ok {
		return "", fmt.Errorf("README.md has no %q line: the Layout section starts with it", layoutBegin)
	}
	table, _, ok := strings.Cut(after, layoutEnd)
	if !ok {
		return "", fmt.Errorf("README.md has no %q line after the layout table", layoutEnd)
	}
	return table, nil
}
