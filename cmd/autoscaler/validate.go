package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"ebb.dev/ebb/pkg/manifest"
)

// Exit statuses of validate (its usage text and the README give them).
const (
	exitValid      = 0
	exitInvalid    = 1
	exitUnreadable = 2 // also: bad flags
)

const validateUsage = `usage: autoscaler validate [--output text|json|yaml] -f FILE|DIR [-f FILE|DIR ...]

Validates a config-autoscaler ConfigMap, Deployments and Knative Services
and Configurations (YAML or JSON, several documents per file, - for stdin)
as Ebb does on a cluster, and prints the effective settings of every
revision (one per Deployment or Knative object, configured by its pod
template's annotations; a Knative containerConcurrency is the annotation
autoscaling.ebb.dev/container-concurrency) and every error, including each
Knative field Ebb cannot honour (a traffic split, a second container), and
every warning (a cpu or memory utilization of a container without the
request: valid, as in Kubernetes; with --output json or yaml, warnings go to
stderr).

Exit status: 0 valid, 1 invalid, 2 a file cannot be read or parsed.

Flags:
`

// checkManifestArgs: the manifests of validate and convert come with -f
// only, and at least one.
func checkManifestArgs(fs *flag.FlagSet, files fileList) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q: give files with -f FILE", fs.Arg(0))
	case len(files) == 0:
		return errors.New("no manifest given: use -f FILE or -f DIR (repeatable; - for stdin)")
	}
	return nil
}

// fileList is the repeatable -f flag.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

type validateOptions struct {
	files  fileList
	output string
}

func runValidate(args []string, s streams) int {
	opts, err := parseValidateFlags(args, s.err)
	if errors.Is(err, flag.ErrHelp) {
		return exitValid
	}
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler validate: %v\n", err)
		return exitUnreadable
	}
	set, err := readManifests(opts.files, s.in)
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(s.err, "autoscaler validate: %s\n", line)
		}
		return exitUnreadable
	}
	rep := buildReport(set)
	for _, note := range rep.notes {
		fmt.Fprintf(s.err, "autoscaler validate: note: %s\n", note)
	}
	if opts.output == "json" || opts.output == "yaml" {
		for _, rr := range rep.Revisions {
			for _, w := range rr.warnings {
				fmt.Fprintf(s.err, "autoscaler validate: warning: revision %s/%s at %s: %s\n", rr.Namespace, rr.Name, rr.origin, w)
			}
		}
		if err := writeStructured(s.out, opts.output, rep); err != nil {
			fmt.Fprintf(s.err, "autoscaler validate: writing %s: %v\n", strings.ToUpper(opts.output), err)
			return exitUnreadable
		}
	} else {
		writeText(s.out, rep)
	}
	if !rep.valid() {
		return exitInvalid
	}
	return exitValid
}

func parseValidateFlags(args []string, errOut io.Writer) (validateOptions, error) {
	var opts validateOptions
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Var(&opts.files, "f", "a manifest file to read (repeatable; - for stdin)")
	fs.StringVar(&opts.output, "output", "text", "output format: text, json or yaml (json's document as YAML)")
	fs.StringVar(&opts.output, "o", "text", "shorthand for --output")
	fs.Usage = func() {
		fmt.Fprint(errOut, validateUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if err := checkManifestArgs(fs, opts.files); err != nil {
		return opts, err
	}
	switch {
	case opts.output != "text" && opts.output != "json" && opts.output != "yaml":
		return opts, fmt.Errorf("--output %q: want text, json or yaml", opts.output)
	}
	return opts, nil
}

// readManifests reads and decodes every file (a directory: its *.yaml,
// *.yml and *.json files, sorted). It reports every file that cannot be
// read or decoded, not only the first.
func readManifests(paths []string, stdin io.Reader) (*manifest.Set, error) {
	set := &manifest.Set{}
	files, errs := expandDirs(paths)
	stdinRead := false
	for _, name := range files {
		data, err := readFile(name, stdin, &stdinRead)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		display := name
		if name == "-" {
			display = "<stdin>"
		}
		s, err := manifest.Decode(display, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		set.Merge(s)
	}
	return set, errors.Join(errs...)
}

// expandDirs replaces each directory by its manifest files.
func expandDirs(paths []string) ([]string, []error) {
	var files []string
	var errs []error
	for _, p := range paths {
		st, err := os.Stat(p)
		if p == "-" || err != nil || !st.IsDir() {
			files = append(files, p) // readFile reports what is wrong
			continue
		}
		var found []string
		for _, pat := range []string{"*.yaml", "*.yml", "*.json"} {
			m, _ := filepath.Glob(filepath.Join(p, pat)) // the pattern is valid
			found = append(found, m...)
		}
		if len(found) == 0 {
			errs = append(errs, fmt.Errorf("reading manifests: directory %s has no *.yaml, *.yml or *.json file", p))
		}
		slices.Sort(found)
		files = append(files, found...)
	}
	return files, errs
}

func readFile(name string, stdin io.Reader, stdinRead *bool) ([]byte, error) {
	if name != "-" {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading manifest: %w", err)
		}
		return data, nil
	}
	if *stdinRead {
		return nil, errors.New("-f - given twice: standard input can be read only once")
	}
	*stdinRead = true
	data, err := io.ReadAll(stdin)
	if err != nil {
		return nil, fmt.Errorf("reading standard input: %w", err)
	}
	return data, nil
}
