package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"ebb.dev/ebb/pkg/scaling/whatif"
)

func TestTune(t *testing.T) {
	args := func(extra ...string) []string {
		return append([]string{"tune", "--invocations", filepath.Join(whatifData, "invocations.csv"),
			"--durations", filepath.Join(whatifData, "durations.csv"), "--function", "dfd4d5d8eb32c5bcdbdb163c282678fbc711fad4115566c44472a23b494d0693"}, extra...)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{name: "a bound some setting meets", args: args("--max-cold-start-share", "0.5"), wantCode: 0,
			want: []string{"arrivals random (seed 1); cost: idle replica-seconds + 1s for each replica start", "cost replica-s",
				"Pareto front", "min-scale 1", "chosen for a cold-start share of at most 0.5:", "autoscaling.ebb.dev/scale-to-zero-policy: ",
				"before: sequence predictor", "(comparison)", "hybrid histogram predictor (Shahrad et al.)", "by function group",
				"decided on: phase", "10 to 60 an hour"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, nil, &out, &errOut)
			for _, w := range tt.want {
				if code != tt.wantCode || !strings.Contains(out.String(), w) {
					t.Errorf("exit %d (want %d), stdout:\n%s\nstderr: %s\nwant %q", code, tt.wantCode, out.String(), errOut.String(), w)
				}
			}
		})
	}
	var out, errOut bytes.Buffer
	if code := run(args("--max-cold-start-share", "2"), nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "within [0, 1]") {
		t.Errorf("share 2: exit %d, %q; want 2 and the rule", code, errOut.String())
	}
	errOut.Reset()
	if code := run(args("--arrivals", "even", "--seed", "2"), nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "add --arrivals random") {
		t.Errorf("--seed with even arrivals: exit %d, %q; want 2 and the fix", code, errOut.String())
	}
}

func TestWriteTuneNoneMeets(t *testing.T) {
	var b bytes.Buffer
	pts := []whatif.Point{{Candidate: whatif.Candidate{Name: "knative"}, Total: whatif.Result{Requests: 10, ColdStarts: 5}}}
	if writeTune(&b, pts, 0.1) || !strings.Contains(b.String(), "no setting keeps the cold-start share at or below 0.1") {
		t.Errorf("got:\n%s\nwant no setting chosen, and why", b.String())
	}
}
