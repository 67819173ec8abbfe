package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// checkOutput checks an -o/--output value against the formats a command
// offers (its default first), naming them in the error.
func checkOutput(got string, formats ...string) error {
	for _, f := range formats {
		if got == f {
			return nil
		}
	}
	return fmt.Errorf("--output %q: want %s", got, strings.Join(formats, ", "))
}

// writeStructured writes v as one JSON document (indented by two spaces,
// <, > and & left readable) or as YAML (the same document: the same field
// names, map keys sorted): the -o json and -o yaml of the commands that
// print a table for people by default (tune, simulate -o, whatif, validate).
func writeStructured(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("output format %q: want json or yaml", format)
}
