package convert

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// rawJSON is an object passed through as decoded.
type rawJSON []byte

// WriteYAML writes the objects as one YAML stream, each document headed by
// its comment. Fields a typed object writes though nobody set them
// (creationTimestamp: null, status: {}, resources: {}, strategy: {}) are
// left out.
func (r *Result) WriteYAML(w io.Writer) error {
	for i, o := range r.Objects {
		js, ok := o.Value.(rawJSON)
		if !ok {
			var err error
			if js, err = json.Marshal(o.Value); err != nil {
				return fmt.Errorf("writing object %d: %w", i+1, err)
			}
		}
		var v any
		if err := json.Unmarshal(js, &v); err != nil {
			return fmt.Errorf("writing object %d: %w", i+1, err)
		}
		out, err := yaml.Marshal(prune(v))
		if err != nil {
			return fmt.Errorf("writing object %d: %w", i+1, err)
		}
		if _, err := fmt.Fprintf(w, "---\n# %s\n%s", o.Comment, out); err != nil {
			return err
		}
	}
	return nil
}

// emptyIsUnset are the fields whose empty object means "not set" in Go's
// types; other empty objects (emptyDir: {}) mean something and stay.
var emptyIsUnset = map[string]bool{"status": true, "resources": true, "strategy": true}

func prune(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			x = prune(x)
			m, isMap := x.(map[string]any)
			switch {
			case x == nil:
				delete(v, k)
			case isMap && len(m) == 0 && emptyIsUnset[k]:
				delete(v, k)
			default:
				v[k] = x
			}
		}
	case []any:
		for i := range v {
			v[i] = prune(v[i])
		}
	}
	return v
}
