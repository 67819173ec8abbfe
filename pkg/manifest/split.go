package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// chunk is one document of a file before decoding.
type chunk struct {
	data []byte
	line int  // 1-based line of data's first line in the file
	json bool // data is exactly one JSON value
}

// split cuts a file into documents. A file whose first non-blank byte is
// '{' or '[' is read as a stream of JSON values; if that fails (flow-style
// YAML looks the same) it is read as YAML. YAML documents are separated by
// lines starting with "---" followed by nothing but spaces or a comment,
// as kubectl does.
func split(data []byte) []chunk {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if chunks, ok := splitJSON(data); ok {
			return chunks
		}
	}
	return splitYAML(data)
}

func splitJSON(data []byte) ([]chunk, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var chunks []chunk
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		start := end - len(raw)
		chunks = append(chunks, chunk{data: raw, line: 1 + bytes.Count(data[:start], []byte("\n")), json: true})
	}
	return chunks, true
}

func splitYAML(data []byte) []chunk {
	var chunks []chunk
	start, startLine := 0, 1
	line := 1
	for pos := 0; pos < len(data); line++ {
		end := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		if end >= 0 {
			next = pos + end + 1
		}
		if isSeparator(data[pos:next]) {
			chunks = append(chunks, chunk{data: data[start:pos], line: startLine})
			start, startLine = next, line+1
		}
		pos = next
	}
	return append(chunks, chunk{data: data[start:], line: startLine})
}

func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// firstContentLine is the line of the first byte of c that is neither
// blank nor a comment: where a reader sees the document start.
func (c chunk) firstContentLine() int {
	for i, l := range strings.Split(string(c.data), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return c.line + i
		}
	}
	return c.line
}

// toJSON converts the chunk to JSON, rejecting duplicate keys. It returns
// nil for an empty document. YAML scalars are not coerced to strings, so an
// unquoted number where Kubernetes wants a string fails as on a cluster.
func (c chunk) toJSON() ([]byte, error) {
	if c.json {
		return c.data, nil
	}
	js, err := yaml.YAMLToJSONStrict(c.data)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %s", c.absoluteLines(oneLine(err.Error())))
	}
	if string(bytes.TrimSpace(js)) == "null" {
		return nil, nil
	}
	return js, nil
}

// oneLine flattens the YAML parser's messages ("yaml: unmarshal errors:\n
// line 4: ...") to one line.
func oneLine(msg string) string {
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// absoluteLines rewrites the YAML parser's "line N" (counted from the start
// of the document) into lines of the file.
func (c chunk) absoluteLines(msg string) string {
	return yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return "line " + strconv.Itoa(c.line+n-1)
	})
}
