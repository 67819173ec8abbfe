// Command checkcitations reports text that cites a file outside the
// repository: the code, its comments and its docs speak of the project
// alone, and a reader has only the repository.
//
// It reads every tracked file's comments (Go comments; the # comments of
// shell scripts, Makefiles and YAML) and the whole of every Markdown file,
// and finds each path-like word in them (a/b/c.ext, name.md, /abs/path,
// ../up). A path is a citation of the repository when it names a tracked
// file or directory (from the repository's root, from the citing file's
// directory, or as the end of a tracked path: doc.go, inject/testdata/x.yaml).
// It is reported when it does not, in any spelling:
//
//   - an absolute path of a machine (under a home or workspace directory:
//     hostRoots);
//   - a relative path that leaves the repository (one that starts by
//     going up from the root);
//   - a Markdown file that is not one of the repository's (a style guide
//     beside it, a.md of a neighbouring directory), or a section of one that it does not
//     have (docs/knative.md §3);
//   - a path with a directory (spec/x.md, reference/hpa.md) that is not
//     the repository's, unless the text around it names the project it
//     belongs to (Knative's pkg/queue/breaker.go, Go's net/http/...).
//
// Bare file names of other kinds (out.yaml, x.json) are examples, not
// citations, and so are names with placeholders in capitals (FILE.svg,
// DIR/NAME.json). It also reports the phrases that speak of the work
// rather than the project (its sessions and stops: phraseRE).
//
//	go run ./hack/checkcitations
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

func main() {
	out, err := exec.Command("git", "ls-files").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkcitations: listing the repository's files:", err)
		os.Exit(2)
	}
	files := strings.Fields(string(bytes.TrimSpace(out)))
	findings := check(newRepo(files, os.ReadFile))
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		fmt.Printf("%d citations of files outside the repository (cite the repository's own files, or say in your own words what is needed)\n",
			len(findings))
		os.Exit(1)
	}
}
