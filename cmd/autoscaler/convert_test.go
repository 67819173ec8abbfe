package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/manifest"
)

const corpus = "../../pkg/manifest/convert/testdata/"

func runConvertCapture(args []string, stdin string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := runConvert(args, streams{in: strings.NewReader(stdin), out: &out, err: &errOut})
	return code, out.String(), errOut.String()
}

// validateJSON runs validate --output json on the files (or on stdin) and
// returns its report as a generic value.
func validateJSON(t *testing.T, stdin string, files ...string) map[string]any {
	t.Helper()
	args := []string{"--output", "json"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	code, out, errOut := runValidateCapture(args, stdin)
	if code != exitValid {
		t.Fatalf("validate %v: exit %d\n%s\n%s", files, code, out, errOut)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestConvertRoundTripKnative: `convert | validate` resolves every Knative
// sample of the corpus to the settings validate reads from the Knative
// Service itself, timeouts included, in both forms.
func TestConvertRoundTripKnative(t *testing.T) {
	sources := []string{corpus + "helloworld-go.yaml", corpus + "autoscale-go.yaml", corpus + "grpc-ping.yaml",
		corpus + "timeouts.yaml", "../../deploy/local/hello-knative.yaml"}
	for _, src := range sources {
		for _, form := range [][]string{nil, {"--sidecar"}} {
			t.Run(src+strings.Join(form, ""), func(t *testing.T) {
				code, out, errOut := runConvertCapture(append(form, "-f", src), "")
				if code != exitConverted {
					t.Fatalf("convert: exit %d: %s", code, errOut)
				}
				want := validateJSON(t, "", src)
				got := validateJSON(t, out, "-")
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("validate of the source vs of convert's output (-source +converted):\n%s", diff)
				}
				src, _ := os.ReadFile(src)
				if diff := cmp.Diff(resolvedTimeouts(t, string(src)), resolvedTimeouts(t, out)); diff != "" {
					t.Errorf("timeouts of the source vs of convert's output (-source +converted):\n%s", diff)
				}
			})
		}
	}
}

// TestConvertRoundTripHPA: convert's output of the HPA walkthrough (v2 and
// v1) resolves to what the hand-written HPA-class revision of
// deploy/local/php-apache.yaml does (cpu at 50%, 1 to 10 pods); an HPA
// with two metrics and a behavior resolves to them exactly.
func TestConvertRoundTripHPA(t *testing.T) {
	want := validateJSON(t, "", "../../deploy/local/php-apache.yaml")
	for _, src := range []string{corpus + "php-apache-v2.yaml", corpus + "php-apache-v1.yaml"} {
		t.Run(src, func(t *testing.T) {
			code, out, errOut := runConvertCapture([]string{"-f", src}, "")
			if code != exitConverted {
				t.Fatalf("convert: exit %d: %s", code, errOut)
			}
			got := validateJSON(t, out, "-")
			if diff := cmp.Diff(want["revisions"], got["revisions"]); diff != "" {
				t.Errorf("revisions (-deploy/local/php-apache.yaml +converted):\n%s", diff)
			}
		})
	}
	src := corpus + "hpa-behavior.yaml"
	code, out, errOut := runConvertCapture([]string{"-f", src}, "")
	if code != exitConverted {
		t.Fatalf("convert %s: exit %d: %s", src, code, errOut)
	}
	rev := convertedRevision(t, out)
	data, _ := os.ReadFile(src)
	in, err := manifest.Decode(src, data)
	if err != nil {
		t.Fatal(err)
	}
	h := in.HPAs[0].Object.Spec
	if diff := cmp.Diff(hpa.ToBehavior(hpa.DefaultBehavior(h.Behavior)), rev.Behavior); diff != "" {
		t.Errorf("behavior (-HPA +converted):\n%s", diff)
	}
	wantMetrics := []config.MetricTarget{{Metric: "cpu", Target: 60, Container: "api"}, {Metric: "memory", Target: 500 << 20, AverageValue: true}}
	if diff := cmp.Diff(wantMetrics, rev.Metrics); diff != "" {
		t.Errorf("metrics (-want +converted):\n%s", diff)
	}
	if rev.Class != config.ClassHPA || rev.MinScale != *h.MinReplicas || rev.MaxScale != h.MaxReplicas {
		t.Errorf("class %s, min %d, max %d; want %s, %d, %d", rev.Class, rev.MinScale, rev.MaxScale, config.ClassHPA, *h.MinReplicas, h.MaxReplicas)
	}
}

// resolvedTimeouts are the timeouts validate reads for each revision of
// the manifests, as the queue-proxy applies them: a request timeout not
// given is the default, the others 0 (the request timeout, none).
func resolvedTimeouts(t *testing.T, manifests string) [][3]time.Duration {
	t.Helper()
	set, err := manifest.Decode("manifests", []byte(manifests))
	if err != nil {
		t.Fatal(err)
	}
	var out [][3]time.Duration
	for _, rr := range buildReport(set).Revisions {
		got := [3]time.Duration{config.DefaultRevisionTimeout, 0, 0}
		if tm := rr.timeouts; tm != nil {
			for i, v := range []*time.Duration{tm.Request, tm.ResponseStart, tm.Idle} {
				if v != nil {
					got[i] = *v
				}
			}
		}
		out = append(out, got)
	}
	return out
}

// convertedRevision resolves the one revision of convert's output as
// validate does.
func convertedRevision(t *testing.T, out string) *config.Revision {
	t.Helper()
	set, err := manifest.Decode("converted", []byte(out))
	if err != nil {
		t.Fatalf("convert's output does not decode: %v\n%s", err, out)
	}
	rep := buildReport(set)
	if len(rep.Revisions) != 1 || !rep.Revisions[0].Valid {
		t.Fatalf("revisions %+v; want one, valid", rep.Revisions)
	}
	return rep.Revisions[0].revision
}

// TestConvertCommand: exit statuses, directories and stdin, warnings on
// stderr, nothing on stdout when anything cannot be converted.
func TestConvertCommand(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		stdin     string
		wantExit  int
		wantOut   string // a substring of stdout ("" : stdout must be empty)
		wantErr   string // a substring of stderr ("" : stderr must be empty)
		wantNoOut bool
	}{
		{name: "a directory", args: []string{"-f", "../../deploy/local"}, wantExit: 0,
			wantOut: "# from Knative Service default/hello-knative at ../../deploy/local/hello-knative.yaml"},
		{name: "stdin", args: []string{"-f", "-"}, stdin: "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: s}\n" +
			"spec: {template: {metadata: {name: s-1}, spec: {containers: [{image: x}]}}}\n", wantExit: 0,
			wantOut: "autoscaling.ebb.dev/enabled: \"true\"", wantErr: `warning: Knative Service default/s at <stdin>:1 (document 1): spec.template.metadata.name`},
		{name: "unconvertible", args: []string{"-f", "-"}, stdin: "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: s}\n" +
			"spec: {template: {spec: {containers: [{image: x}]}}, traffic: [{percent: 50, tag: a}]}\n", wantExit: 1,
			wantErr: `spec.traffic[0].tag: "a": tags are not supported`},
		{name: "unreadable", args: []string{"-f", "testdata/validate/missing.yaml"}, wantExit: 2, wantErr: "no such file"},
		{name: "no file", args: nil, wantExit: 2, wantErr: "no manifest given"},
		{name: "stray argument", args: []string{"x.yaml"}, wantExit: 2, wantErr: `unexpected argument "x.yaml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runConvertCapture(tt.args, tt.stdin)
			if code != tt.wantExit {
				t.Errorf("exit %d, want %d\nstderr:\n%s", code, tt.wantExit, errOut)
			}
			if (tt.wantOut == "") != (out == "") || !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout %q; want it to contain %q (empty if that is empty)", out, tt.wantOut)
			}
			if (tt.wantErr == "") != (errOut == "") || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q; want it to contain %q (empty if that is empty)", errOut, tt.wantErr)
			}
		})
	}
}
