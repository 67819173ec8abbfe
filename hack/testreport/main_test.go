package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReport(t *testing.T) {
	tests := []struct {
		name, in, want string
		failed         bool
	}{
		{
			name: "a pass and a skip with its reason",
			in: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: skipping: chromium not on PATH (apt-get install chromium)\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: a log of a passing test\n"}
{"Action":"pass","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`,
			want: "SKIP p TestA: a_test.go:9: skipping: chromium not on PATH (apt-get install chromium)\nok  \tp\t0.1s\n",
		},
		{
			name: "a failed test prints its output",
			in: `{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:5: boom\n"}
{"Action":"fail","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}
{"Action":"fail","Package":"p"}
`,
			want:   "    c_test.go:5: boom\nFAIL\tp\t0.1s\n",
			failed: true,
		},
		{
			name: "a build failure",
			in: `{"ImportPath":"p [p.test]","Action":"build-output","Output":"p/x.go:1: syntax error\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"fail","Package":"p"}
`,
			want:   "p/x.go:1: syntax error\n",
			failed: true,
		},
		{
			name: "a timeout names the test that never ended",
			in: `{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"=== RUN   TestHang\n"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"panic: test timed out after 2s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t2.0s\n"}
{"Action":"fail","Package":"p"}
`,
			want:   "=== RUN   TestHang\npanic: test timed out after 2s\nUNFINISHED p: TestHang (their output is above)\nFAIL\tp\t2.0s\n",
			failed: true,
		},
		{name: "nothing ran", in: "go: unknown flag -x\n", want: "go: unknown flag -x\n", failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			failed, err := report(strings.NewReader(tt.in), &out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]any{tt.want, tt.failed}, []any{out.String(), failed}); diff != "" {
				t.Errorf("report: output, failed (-want +got):\n%s", diff)
			}
		})
	}
}
