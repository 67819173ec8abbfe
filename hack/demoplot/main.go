// Command demoplot replays every scenario of deploy/examples (JSON or
// YAML; files that are not scenarios, such as Deployments, are skipped)
// and draws each as docs/images/<name>.svg: `make demo-plot`.
//
//	go run ./hack/demoplot [-in deploy/examples] [-out docs/images]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/pkg/autoscaler/plot"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/scaling/scenario"
)

func main() {
	in := flag.String("in", "deploy/examples", "the directory of scenarios")
	out := flag.String("out", "docs/images", "where the SVGs go")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "demoplot:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	entries, err := os.ReadDir(in)
	if err != nil {
		return err
	}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".json" && ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(in, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !isScenario(data) {
			fmt.Printf("%s: not a scenario, skipped\n", path)
			continue
		}
		dst := filepath.Join(out, strings.TrimSuffix(e.Name(), ext)+".svg")
		if err := draw(data, dst); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fmt.Printf("%s -> %s\n", path, dst)
	}
	return nil
}

// isScenario tells a scenario (an object with samples) from a manifest.
func isScenario(data []byte) bool {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return false
	}
	var probe struct {
		Samples json.RawMessage `json:"samples"`
		Kind    string          `json:"kind"`
	}
	return json.Unmarshal(js, &probe) == nil && probe.Kind == "" && len(probe.Samples) > 0
}

func draw(data []byte, dst string) error {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	scn, err := scenario.Parse(js)
	if err != nil {
		return err
	}
	rev, err := revision(scn)
	if err != nil {
		return err
	}
	var lines []scenario.Line
	if err := scenario.Replay(scn, rev, func(l scenario.Line) error { lines = append(lines, l); return nil }); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := plot.Render(&buf, plot.FormatSVG, scn.Samples, lines, rev); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// revision is the scenario's revision, resolved as `autoscaler simulate`
// resolves it.
func revision(scn *scenario.Scenario) (*config.Revision, error) {
	return scn.Revision(hpa.DocumentParser{})
}
