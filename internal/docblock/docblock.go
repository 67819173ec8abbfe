// Package docblock reads the code blocks that tests take from the docs, so
// that what the docs show is what the tests check.
package docblock

import (
	"bytes"
	"fmt"
	"os"
)

// YAML returns the yaml code block of the Markdown file path that stands
// between the comments <!-- NAME:begin --> and <!-- NAME:end -->.
func YAML(path, name string) ([]byte, error) {
	md, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	_, rest, ok1 := bytes.Cut(md, []byte("<!-- "+name+":begin -->\n```yaml\n"))
	block, _, ok2 := bytes.Cut(rest, []byte("```\n<!-- "+name+":end -->"))
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s has no %s block (a yaml code block between <!-- %[2]s:begin --> and <!-- %[2]s:end -->)", path, name)
	}
	return block, nil
}
