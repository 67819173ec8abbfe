package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"ebb.dev/ebb/pkg/autoscaler/plot"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/scenario"
)

// writePlot draws the replay of scn (its decisions are lines) to path, as
// SVG or as an HTML page by the extension (.svg, .html or .htm):
// `autoscaler simulate --plot FILE`. Nothing is written when drawing fails.
func writePlot(path string, scn *scenario.Scenario, rev *config.Revision, lines []scenario.Line) error {
	format, err := plotFormat(path)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := plot.Render(&buf, format, scn.Samples, lines, rev); err != nil {
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return nil
}

// plotFormat is the plot format of a file name's extension.
func plotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg":
		return plot.FormatSVG, nil
	case ".html", ".htm":
		return plot.FormatHTML, nil
	case "":
		return "", fmt.Errorf("--plot %s: the file name has no extension; end it with .svg or .html", path)
	default:
		return "", fmt.Errorf("--plot %s: extension %q is not a plot format; end the file name with .svg or .html", path, ext)
	}
}
