package envconfig

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"ebb.dev/ebb/pkg/fielderr"
)

// Setting is one row of a settings table for a T.
type Setting[T any] struct {
	Flag    string // the command-line flag, without dashes
	Env     string // the environment variable
	Default string // the value when neither is given: the field's only default
	Doc     string // what it does; says what 0 or empty means when it is allowed
	// Secret keeps the value out of error messages (and so out of logs).
	Secret bool
	// Apply parses v into t, or returns the rule v breaks.
	Apply func(t *T, v string) error
}

// Within turns a Setting of a part U of T into a Setting of T: a program's
// table includes the rows of a package's options struct.
func Within[T, U any](s Setting[U], part func(*T) *U) Setting[T] {
	apply := s.Apply
	return Setting[T]{Flag: s.Flag, Env: s.Env, Default: s.Default, Doc: s.Doc, Secret: s.Secret,
		Apply: func(t *T, v string) error { return apply(part(t), v) }}
}

// Defaults applies every row's default to t. A default that its own parser
// refuses is a programming error: Defaults returns it, for a test to fail.
func Defaults[T any](table []Setting[T], t *T) error {
	var errs []error
	for _, s := range table {
		if err := s.Apply(t, s.Default); err != nil {
			errs = append(errs, rowError(s, "default", s.Default, err))
		}
	}
	return errors.Join(errs...)
}

// Load applies the table to t in row order: a flag wins over its
// environment variable (an empty one counts as unset), which wins over the
// default. Every bad value comes back at once, each a *fielderr.Error that
// names where the value came from (the flag or the variable), the value,
// the rule it breaks and the fix:
//
//	flag "--wait" = "2h": must be a duration within [0s, 1m0s]; fix: set WAIT (or --wait) to a value that does (default "1s")
//
// -h and --help return an error that wraps
// flag.ErrHelp: the program prints Usage. Positional arguments are refused.
func Load[T any](name string, table []Setting[T], args []string, getenv func(string) string, t *T) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	given := make(map[string]*string, len(table))
	for _, s := range table {
		given[s.Flag] = fs.String(s.Flag, "", s.Doc)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("parsing flags: unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	for _, s := range table {
		v, from := s.Default, "default"
		if e := getenv(s.Env); e != "" {
			v, from = e, s.Env
		}
		if set[s.Flag] {
			v, from = *given[s.Flag], "--"+s.Flag
		}
		if err := s.Apply(t, v); err != nil {
			errs = append(errs, rowError(s, from, v, err))
		}
	}
	return errors.Join(errs...)
}

// Usage writes the table's reference to w: every flag with its variable,
// default and documentation.
func Usage[T any](w io.Writer, name string, table []Setting[T]) {
	fmt.Fprintf(w, "Usage: %s [flags]\n\nEvery flag has an environment variable; the flag wins, then the variable, then the default.\n", name)
	for _, s := range table {
		fmt.Fprintf(w, "  --%s (env %s, default %q)\n      %s\n", s.Flag, s.Env, s.Default, s.Doc)
	}
}

// rowError is the fielderr.Error of a row whose value v (from the flag, the
// variable, or "default") breaks the rule err names:
//
//	environment variable "WAIT" = "2h": must be a duration within [0s, 1m0s]; fix: set WAIT (or --wait) to a value that does (default "1s")
func rowError[T any](s Setting[T], from, v string, err error) error {
	source, key := "environment variable", s.Env
	if strings.HasPrefix(from, "--") {
		source, key = "flag", from
	}
	if s.Secret {
		v = "(redacted)" // a secret never reaches a log
	}
	fix := fmt.Sprintf("set %s (or --%s) to a value that does (default %q)", s.Env, s.Flag, s.Default)
	if from == "default" {
		fix = fmt.Sprintf("the default of %s breaks its own rule: a bug in the program, report it", s.Env)
	}
	return &fielderr.Error{Source: source, Key: key, Value: v, Defaulted: from == "default", Rule: err.Error(), Fix: "fix: " + fix}
}
