package envconfig

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
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
// default. Every bad value comes back at once, each in the form
//
//	ENV (--flag) = "value": rule
//
// where the parenthesis says where the value came from (the flag, the
// variable, or "default").
func Load[T any](name string, table []Setting[T], args []string, getenv func(string) string, t *T) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	given := make(map[string]*string, len(table))
	for _, s := range table {
		given[s.Flag] = fs.String(s.Flag, "", fmt.Sprintf("%s (env %s, default %q)", s.Doc, s.Env, s.Default))
	}
	if err := fs.Parse(args); err != nil {
		return err
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

func rowError[T any](s Setting[T], from, v string, err error) error {
	shown := strconv.Quote(v)
	if s.Secret {
		shown = "(redacted)" // a secret never reaches a log
	}
	return fmt.Errorf("%s (%s) = %s: %w", s.Env, from, shown, err)
}
