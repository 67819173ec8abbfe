package whatif

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseInvocations(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Function
		wantErr string
	}{
		{name: "two functions", in: "HashFunction,HashApp,HashOwner,minute_1,minute_2\nf1,a,o,3,0\nf2,a,o,0,12\n",
			want: []Function{{Hash: "f1", App: "a", Owner: "o", Invocations: []uint32{3, 0}}, {Hash: "f2", App: "a", Owner: "o", Invocations: []uint32{0, 12}}}},
		{name: "wrong header", in: "Function,App,Owner,m1\n", wantErr: "want HashFunction,HashApp,HashOwner,minute_1"},
		{name: "negative count", in: "HashFunction,HashApp,HashOwner,minute_1\nf,a,o,-1\n", wantErr: `line 2, minute_1: "-1"`},
		{name: "short row", in: "HashFunction,HashApp,HashOwner,minute_1,minute_2\nf,a,o,1\n", wantErr: "wrong number of fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseInvocations(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, errTrace) {
					t.Fatalf("error %v: want ErrTrace saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAndJoinDurations(t *testing.T) {
	d, err := ParseDurations(strings.NewReader("HashFunction,HashApp,HashOwner,Count,Average,Minimum\nf1,a,o,3,365,53\nf2,a,o,1,0,0\nf3,a,o,1,2.4,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"f1": 365 * time.Millisecond, "f2": time.Millisecond, "f3": 2 * time.Millisecond}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("durations (-want +got):\n%s", diff)
	}
	fns := []Function{{Hash: "f1"}, {Hash: "nope"}}
	if err := JoinDurations(fns, d); err == nil || !strings.Contains(err.Error(), "first: nope") {
		t.Errorf("join: %v, want the missing function named", err)
	}
	if _, err := ParseDurations(strings.NewReader("HashFunction,Count\n")); err == nil {
		t.Error("a durations file without Average parsed")
	}
	if _, err := ParseMemory(strings.NewReader("HashApp,HashOwner,SampleCount,AverageAllocatedMb\na,o,1,100\n")); err != nil {
		t.Errorf("memory: %v", err)
	}
}

// FuzzParseInvocations: any input parses or fails with ErrTrace, and a
// parsed trace simulates within its bounds.
func FuzzParseInvocations(f *testing.F) {
	f.Add("HashFunction,HashApp,HashOwner,minute_1,minute_2\nf1,a,o,3,0\n")
	f.Add("HashFunction,HashApp,HashOwner,minute_1\nf,a,o,70\n")
	f.Fuzz(func(t *testing.T, in string) {
		fns, err := ParseInvocations(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, errTrace) {
				t.Fatalf("error %v is not ErrTrace", err)
			}
			return
		}
		for i := range fns {
			if len(fns[i].Invocations) > 3 || fns[i].requests() > 500 {
				continue // keep each input's simulation short
			}
			fns[i].Duration = time.Second
			r := Run(&fns[i], Options{Revision: revision(t, nil), ColdStart: time.Second})
			if r.Requests != fns[i].requests() || r.ColdStarts > r.Requests || r.IdleReplicaSeconds() > r.ReplicaSeconds() {
				t.Fatalf("%+v: requests %d of %d, cold %d, idle %v of %v", fns[i], r.Requests, fns[i].requests(), r.ColdStarts,
					r.IdleReplicaSeconds(), r.ReplicaSeconds())
			}
		}
	})
}
