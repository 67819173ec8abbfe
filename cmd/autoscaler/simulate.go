package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/scaling/scenario"
)

const simulateUsage = `usage: autoscaler simulate [--explain] [--plot FILE] [-f MANIFEST]... [-o jsonl|json|yaml|table] SCENARIO

Replays SCENARIO (a JSON or YAML file, or - for standard input) through the
decider of its class (KPA, or HPA with autoscaling.knative.dev/class:
hpa.autoscaling.knative.dev) on a virtual clock and prints one JSON line per
decision:

  {"t": 2, "recommended": 3, "desired": 3, "panic": false, "ebc": 181, "activatorInPath": true}

-o json prints the same decisions as one JSON document instead
({"decisions": [...]}), -o yaml as YAML, -o table as a table for people;
the default, -o jsonl, is the one line per decision above.

With --plot FILE.svg (or .html) it also draws the replay: load, target,
recommended and desired replicas, panic and activator periods.

With -f, the settings come from manifests instead: a config-autoscaler
ConfigMap replaces the scenario's config, and the first revision (a
Deployment, or a Knative Service or Configuration, with its
containerConcurrency) replaces its annotations and containerConcurrency,
so a recorded trace can be replayed under the settings of a manifest.

Exit status: 0 on success, 1 when the scenario, its config or its annotations
are invalid (every problem is printed), 2 when the file cannot be read.

Flags:
`

func runSimulate(args []string, s streams) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(s.err)
	explain := fs.Bool("explain", false, "add the state, the observed averages and the reasons of each decision")
	plotPath := fs.String("plot", "", "also draw the replay to FILE.svg or FILE.html")
	var manifests fileList
	fs.Var(&manifests, "f", "take the config and the revision's annotations from this manifest (repeatable; - for stdin)")
	output := fs.String("output", "jsonl", "output format: jsonl (one JSON line per decision), json, yaml or table")
	fs.StringVar(output, "o", "jsonl", "shorthand for --output")
	fs.Usage = func() { fmt.Fprint(s.err, simulateUsage); fs.PrintDefaults() }
	if err := fs.Parse(flagsFirst(fs, args)); err != nil {
		return 2
	}
	if err := checkOutput(*output, "jsonl", "json", "yaml", "table"); err != nil {
		fmt.Fprintf(s.err, "autoscaler simulate: %v\n", err)
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if *plotPath != "" {
		if _, err := plotFormat(*plotPath); err != nil {
			fmt.Fprintf(s.err, "autoscaler simulate: %v\n", err)
			return 2
		}
	}
	data, err := readInput(fs.Arg(0), s.in)
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler simulate: %v\n", err)
		return 2
	}
	scn, err := parseScenario(data)
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler simulate: %s: invalid scenario:\n%v\n", fs.Arg(0), err)
		return 1
	}
	if code := applyManifests(scn, manifests, s); code != 0 {
		return code
	}
	rev, err := scn.Revision(hpa.DocumentParser{})
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler simulate: %s: invalid configuration:\n%v\n", fs.Arg(0), err)
		return 1
	}
	w := bufio.NewWriter(s.out)
	var buf []byte
	var lines []scenario.Line
	var doc simulateDoc
	tw := newSimulateTable(w, *explain)
	err = scenario.Replay(scn, rev, func(l scenario.Line) error {
		if *plotPath != "" {
			lines = append(lines, l)
		}
		switch *output {
		case "table":
			tw.row(l)
			return nil
		case "json", "yaml":
			doc.Decisions = append(doc.Decisions, scenario.AppendJSON(nil, l, *explain))
			return nil
		}
		buf = append(scenario.AppendJSON(buf[:0], l, *explain), '\n')
		_, err := w.Write(buf)
		return err
	})
	if err == nil {
		switch *output {
		case "table":
			err = tw.flush()
		case "json", "yaml":
			if doc.Decisions == nil {
				doc.Decisions = []json.RawMessage{}
			}
			err = writeStructured(w, *output, doc)
		}
	}
	if err == nil && *plotPath != "" {
		err = writePlot(*plotPath, scn, rev, lines)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler simulate: %v\n", err)
		if errors.Is(err, scenario.ErrUnsupportedClass) {
			return 1
		}
		return 2
	}
	return 0
}

// applyManifests puts the settings the manifests give (simulate -f) in
// place of the scenario's.
func applyManifests(scn *scenario.Scenario, files []string, s streams) int {
	p, code := readManifestParts("simulate", files, s)
	if code != 0 {
		return code
	}
	if p.config != nil {
		scn.Config = p.config
	}
	if p.annotations != nil {
		scn.Annotations, scn.ContainerConcurrency = p.annotations, 0 // a Knative containerConcurrency is an annotation there
	}
	return 0
}

// parseScenario accepts JSON, or YAML converted to JSON.
func parseScenario(data []byte) (*scenario.Scenario, error) {
	if !json.Valid(data) {
		converted, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("neither JSON nor YAML: %w", err)
		}
		data = converted
	}
	return scenario.Parse(data)
}

// readInput reads a named file, or standard input for "-".
func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	return data, nil
}

// flagsFirst moves flags (with their values) before positional arguments,
// so that `simulate FILE --explain` works like `simulate --explain FILE`.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i+1:]...)
			i = len(args)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") || i+1 >= len(args) {
				continue
			}
			if f := fs.Lookup(name); f != nil && !isBoolFlag(f) {
				i++
				flags = append(flags, args[i])
			}
		default:
			rest = append(rest, a)
		}
	}
	return append(append(flags, "--"), rest...)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// simulateDoc is simulate -o json and -o yaml: the decisions, each the
// object of its JSON line (with --explain, its explanation too).
type simulateDoc struct {
	Decisions []json.RawMessage `json:"decisions"`
}

// simulateTable is simulate -o table: a row per decision, with --explain
// the state, the observed averages and the reasons' codes.
type simulateTable struct {
	tw      *tabwriter.Writer
	explain bool
}

func newSimulateTable(w io.Writer, explain bool) *simulateTable {
	t := &simulateTable{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), explain: explain}
	head := "T\tDESIRED\tRECOMMENDED\tPANIC\tEBC\tACTIVATOR"
	if explain {
		head += "\tSTATE\tSTABLE\tPANIC AVG\tREASONS"
	}
	fmt.Fprintln(t.tw, head)
	return t
}

func (t *simulateTable) row(l scenario.Line) {
	d := &l.Decision
	act := "-"
	if d.ActivatorInPath {
		act = "in path"
	}
	fmt.Fprintf(t.tw, "%d\t%d\t%d\t%t\t%d\t%s", l.T, d.Desired, d.Recommended, d.Panic, d.EBC, act)
	if t.explain {
		stable, panicAvg := "-", "-"
		if d.HasData {
			stable = strconv.FormatFloat(d.Stable, 'f', 2, 64)
			if d.Class != config.ClassHPA {
				panicAvg = strconv.FormatFloat(d.PanicAverage, 'f', 2, 64)
			}
		}
		var codes []string
		for _, r := range d.Reasons() {
			codes = append(codes, string(r.Code))
		}
		fmt.Fprintf(t.tw, "\t%s\t%s\t%s\t%s", d.State, stable, panicAvg, strings.Join(codes, ","))
	}
	fmt.Fprintln(t.tw)
}

func (t *simulateTable) flush() error { return t.tw.Flush() }
