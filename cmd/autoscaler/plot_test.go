package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/scaling/scenario"
)

// replayExample replays a scenario of deploy/examples as simulate does.
func replayExample(t *testing.T, name string) (*scenario.Scenario, *config.Revision, []scenario.Line) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	scn, err := parseScenario(data)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := scn.Revision(hpa.DocumentParser{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []scenario.Line
	if err := scenario.Replay(scn, rev, func(l scenario.Line) error { lines = append(lines, l); return nil }); err != nil {
		t.Fatal(err)
	}
	return scn, rev, lines
}

func TestWritePlot(t *testing.T) {
	scn, rev, lines := replayExample(t, "burst.json")
	dir := t.TempDir()
	for _, tc := range []struct {
		file, starts, contains string
	}{
		{file: "burst.svg", starts: "<?xml", contains: "desired replicas"},
		{file: "burst.html", starts: "<!doctype html>", contains: "<code>PanicEntered</code>"},
		{file: "BURST.HTM", starts: "<!doctype html>", contains: "<svg"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if err := writePlot(path, scn, rev, lines); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), tc.starts) || !strings.Contains(string(data), tc.contains) {
				t.Errorf("%s: want it to start with %q and contain %q; got %.100q", tc.file, tc.starts, tc.contains, data)
			}
		})
	}
}

func TestWritePlotErrors(t *testing.T) {
	scn, rev, lines := replayExample(t, "settle.yaml")
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, want string
	}{
		{name: "unknown extension", file: "out.png", want: `extension ".png" is not a plot format; end the file name with .svg or .html`},
		{name: "no extension", file: "out", want: "the file name has no extension; end it with .svg or .html"},
		{name: "unwritable", file: filepath.Join("missing", "out.svg"), want: "--plot: open "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			err := writePlot(path, scn, rev, lines)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if _, serr := os.Stat(path); serr == nil {
				t.Errorf("%s was written despite the error", path)
			}
		})
	}
}
