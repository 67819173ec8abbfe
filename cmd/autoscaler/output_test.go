package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/internal/golden"
	"ebb.dev/ebb/pkg/scaling/whatif"
)

const outputGolden = "testdata/output"

// runOut runs the command, which must exit with code, and returns its
// standard output.
func runOut(t *testing.T, code int, args ...string) []byte {
	t.Helper()
	var out, errOut bytes.Buffer
	if got := run(args, nil, &out, &errOut); got != code {
		t.Fatalf("%v: exit %d, want %d; stderr: %s", args, got, code, errOut.String())
	}
	return out.Bytes()
}

// sameDocument fails unless the YAML document is the JSON one (the same
// fields and values once decoded).
func sameDocument(t *testing.T, jsonDoc, yamlDoc []byte) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(jsonDoc, &a); err != nil {
		t.Fatalf("-o json is not one JSON document: %v\n%s", err, jsonDoc)
	}
	if err := yaml.Unmarshal(yamlDoc, &b); err != nil {
		t.Fatalf("-o yaml does not parse: %v\n%s", err, yamlDoc)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("-o yaml is not -o json's document (-json +yaml):\n%s", diff)
	}
}

// TestSimulateOutputs: -o json, yaml and table carry the decisions of the
// default JSON lines, which stay as they were (TestGoldenScenarios); the
// three are golden.
func TestSimulateOutputs(t *testing.T) {
	for _, c := range []struct {
		scenario string
		explain  bool
	}{{"activation-scale", false}, {"activation-scale", true}, {"hpa-unready-missing", true}} {
		file := filepath.Join(scenarioDir, c.scenario+".json")
		args := []string{"simulate", file}
		name := "simulate-" + c.scenario
		if c.explain {
			args, name = append(args, "--explain"), name+"-explain"
		}
		lines := runOut(t, 0, args...)
		js := runOut(t, 0, append(args, "-o", "json")...)
		ya := runOut(t, 0, append(args, "--output", "yaml")...)
		table := runOut(t, 0, append(args, "-o", "table")...)
		if def := runOut(t, 0, append(args, "-o", "jsonl")...); !bytes.Equal(def, lines) {
			t.Errorf("-o jsonl differs from the default output")
		}
		golden.Check(t, filepath.Join(outputGolden, name+".json"), js)
		golden.Check(t, filepath.Join(outputGolden, name+".table"), table)
		sameDocument(t, js, ya)

		var doc struct {
			Decisions []json.RawMessage `json:"decisions"`
		}
		if err := json.Unmarshal(js, &doc); err != nil {
			t.Fatal(err)
		}
		want := strings.Split(strings.TrimSpace(string(lines)), "\n")
		if len(doc.Decisions) != len(want) {
			t.Fatalf("-o json has %d decisions, the JSON lines %d", len(doc.Decisions), len(want))
		}
		for i, d := range doc.Decisions {
			var a, b any
			if err := json.Unmarshal(d, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(want[i]), &b); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(b, a); diff != "" {
				t.Fatalf("decision %d: -o json differs from the JSON line (-line +json):\n%s", i, diff)
			}
		}
		tableRows := strings.Split(strings.TrimSpace(string(table)), "\n")
		if len(tableRows) != len(want)+1 {
			t.Errorf("-o table has %d rows, want a header and %d decisions", len(tableRows), len(want))
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"simulate", "-o", "csv", filepath.Join(scenarioDir, "burst.json")}, nil, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), `--output "csv": want jsonl, json, yaml, table`) {
		t.Errorf("-o csv: exit %d, %q; want 2 and the formats", code, errOut.String())
	}
}

// TestTuneOutputs: tune -o json is golden, -o yaml its document, and both
// carry the table's numbers; the table stays the default.
func TestTuneOutputs(t *testing.T) {
	args := []string{"tune", "--invocations", filepath.Join(whatifData, "invocations.csv"),
		"--durations", filepath.Join(whatifData, "durations.csv"), "--function", "dfd4d5d8eb32c5bcdbdb163c282678fbc711fad4115566c44472a23b494d0693",
		"--max-cold-start-share", "0.5"}
	table := runOut(t, 0, args...)
	if tbl := runOut(t, 0, append(args, "-o", "table")...); !bytes.Equal(tbl, table) {
		t.Errorf("-o table differs from the default output")
	}
	js := runOut(t, 0, append(args, "-o", "json")...)
	ya := runOut(t, 0, append(args, "-o", "yaml")...)
	golden.Check(t, filepath.Join(outputGolden, "tune.json"), js)
	sameDocument(t, js, ya)
	var rep tuneReport
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Chosen == nil || len(rep.Chosen.Groups) != 5 || len(rep.Settings) < 10 {
		t.Fatalf("want every setting, a chosen one and its 5 groups, got %+v", rep)
	}
	// Every setting's row of the table, with the same numbers.
	for _, st := range rep.Settings {
		var row string
		for _, l := range strings.Split(string(table), "\n") {
			if strings.HasPrefix(l, st.Name+"  ") {
				row = l
			}
		}
		f := strings.Fields(strings.TrimPrefix(row, st.Name))
		if len(f) < 6 || f[0] != itoa(st.ColdStarts) || f[3] != itoa(st.ReplicaStarts) {
			t.Errorf("setting %q: table row %q, json %+v", st.Name, row, st)
		}
	}
	if !strings.Contains(string(table), "chosen for a cold-start share of at most 0.5: "+rep.Chosen.Name+" (") {
		t.Errorf("the table chose another setting than %q:\n%s", rep.Chosen.Name, table)
	}
	// None meets the bound: chosen is null (tune exits 1 and says why on stderr).
	pts := []whatif.Point{{Candidate: whatif.Candidate{Name: "knative"}, Total: whatif.Result{Requests: 10, ColdStarts: 5}}}
	var b bytes.Buffer
	if err := writeStructured(&b, "json", newTuneReport(pts, tuneOptions{maxShare: 0.1})); err != nil ||
		!strings.Contains(b.String(), `"chosen": null`) || !strings.Contains(b.String(), `"annotations": {}`) {
		t.Errorf("no setting meets the bound: %v\n%s\nwant chosen null", err, b.String())
	}
}

func itoa(n int64) string { return jsonInt(n) }

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestWhatifYAML: whatif -o yaml is the JSON lines as one document.
func TestWhatifYAML(t *testing.T) {
	args := whatifArgs("--limit", "3")
	lines := strings.Split(strings.TrimSpace(string(runOut(t, 0, args...))), "\n")
	var doc struct {
		Functions []map[string]any `json:"functions"`
		Summary   map[string]any   `json:"summary"`
	}
	if err := yaml.Unmarshal(runOut(t, 0, append(args, "-o", "yaml")...), &doc); err != nil {
		t.Fatal(err)
	}
	got := append(doc.Functions, doc.Summary)
	if len(got) != len(lines) {
		t.Fatalf("-o yaml: %d objects, the JSON lines %d", len(got), len(lines))
	}
	for i, l := range lines {
		var want map[string]any
		if err := json.Unmarshal([]byte(l), &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("object %d (-line +yaml):\n%s", i, diff)
		}
	}
}

// TestValidateYAML: validate -o yaml is -o json's document.
func TestValidateYAML(t *testing.T) {
	args := []string{"validate", "-f", "../../deploy/config-autoscaler.yaml", "-f", "../../deploy/examples/hello.yaml"}
	sameDocument(t, runOut(t, 0, append(args, "-o", "json")...), runOut(t, 0, append(args, "-o", "yaml")...))
}
