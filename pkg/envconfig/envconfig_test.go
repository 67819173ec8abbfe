package envconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type inner struct{ Retries int }

type opts struct {
	Wait  time.Duration
	Token string
	In    inner
}

func table() []Setting[opts] {
	return []Setting[opts]{
		{Flag: "wait", Env: "WAIT", Default: "1s", Doc: "d", Apply: Duration(0, time.Minute, func(o *opts) *time.Duration { return &o.Wait })},
		{Flag: "token", Env: "TOKEN", Default: "", Doc: "d", Secret: true, Apply: func(o *opts, v string) error {
			if v == "bad" {
				return errString("must not be bad")
			}
			o.Token = v
			return nil
		}},
		Within(Setting[inner]{Flag: "retries", Env: "RETRIES", Default: "2", Doc: "d (0: none)",
			Apply: Int(0, 10, func(i *inner) *int { return &i.Retries })}, func(o *opts) *inner { return &o.In }),
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    opts
		wantErr []string
	}{
		{name: "defaults", want: opts{Wait: time.Second, In: inner{Retries: 2}}},
		{name: "flag over env over default; 0 stays 0", args: []string{"--retries", "0"}, env: map[string]string{"RETRIES": "5", "WAIT": "0s"},
			want: opts{In: inner{Retries: 0}}},
		{name: "every error at once, a secret redacted", args: []string{"--wait", "2h"}, env: map[string]string{"TOKEN": "bad", "RETRIES": "x"},
			wantErr: []string{`flag "--wait" = "2h": must be a duration within [0s, 1m0s]; fix: set WAIT (or --wait) to a value that does (default "1s")`,
				`environment variable "TOKEN" = "(redacted)": must not be bad; fix: set TOKEN (or --token)`,
				`environment variable "RETRIES" = "x": must be a whole number within [0, 10]; fix: set RETRIES (or --retries) to a value that does (default "2")`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got opts
			err := Load("test", table(), tc.args, func(k string) string { return tc.env[k] }, &got)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Load (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil || strings.Count(err.Error(), "\n")+1 != len(tc.wantErr) {
				t.Fatalf("Load: %v; want %d errors", err, len(tc.wantErr))
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load: %v; want %q", err, w)
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	var got opts
	if err := Defaults(table(), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(opts{Wait: time.Second, In: inner{Retries: 2}}, got); diff != "" {
		t.Errorf("Defaults (-want +got):\n%s", diff)
	}
	bad := append(table(), Setting[opts]{Flag: "x", Env: "X", Default: "11", Apply: Int(0, 10, func(o *opts) *int { return &o.In.Retries })})
	const want = `environment variable "X" = "11" (default): must be a whole number within [0, 10]; fix: the default of X breaks its own rule`
	if err := Defaults(bad, &got); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Defaults with a default its rule refuses: %v", err)
	}
}
