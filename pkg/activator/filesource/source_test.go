package filesource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/config"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []activator.Revision
		wantErrs []string
	}{
		{name: "defaults", in: `{"revisions":[{"namespace":"default","name":"hello"}]}`,
			want: []activator.Revision{{Namespace: "default", Name: "hello", Timeout: config.DefaultRevisionTimeout}}},
		{name: "everything", in: `{"revisions":[{"namespace":"ns","name":"a","containerConcurrency":2,"timeout":"10s",
			"queueTimeout":"2s","activators":3,"activatorIndex":2,"annotations":{"autoscaling.ebb.dev/load-balancing":"round-robin"},
			"replicas":[{"address":"127.0.0.1:1","ready":true},{"address":"127.0.0.1:2"}]}]}`,
			want: []activator.Revision{{Namespace: "ns", Name: "a", ContainerConcurrency: 2, Timeout: 10 * time.Second,
				QueueTimeout: 2 * time.Second, Activators: 3, ActivatorIndex: 2, LoadBalancing: activator.LBRoundRobin,
				Replicas: []activator.Replica{{Address: "127.0.0.1:1", Ready: true}, {Address: "127.0.0.1:2"}}}}},
		{name: "empty", in: `{}`, want: []activator.Revision{}},
		{name: "unknown field", in: `{"revisions":[{"nmae":"x"}]}`, wantErrs: []string{`unknown field "nmae"`}},
		{name: "all errors at once", in: `{"revisions":[{"namespace":"n","name":"a","containerConcurrency":-1,"timeout":"soon",
			"queueTimeout":"-1s","annotations":{"autoscaling.ebb.dev/load-balancing":"random"},"replicas":[{"address":""}],
			"activators":2,"activatorIndex":3}]}`,
			wantErrs: []string{"revisions[0] (n/a)", "containerConcurrency -1", `timeout "soon"`, `queueTimeout "-1s"`, "activatorIndex 3: must be within [0, 2]",
				`load-balancing" = "random"`, "replicas[0]: address"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse([]byte(tt.in))
			if len(tt.wantErrs) > 0 {
				if err == nil {
					t.Fatalf("Parse succeeded, want errors %q", tt.wantErrs)
				}
				for _, w := range tt.wantErrs {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"revisions":[{"namespace":"default","name":"hello","timeout":"1s","replicas":[{"address":"a:1"}]}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		revs, err := parse(data)
		if err != nil {
			return
		}
		for _, r := range revs {
			if r.Timeout <= 0 || r.QueueTimeout < 0 || r.ContainerConcurrency < 0 || r.Activators < 0 ||
				r.ActivatorIndex < 0 || r.ActivatorIndex > max(r.Activators, 1) {
				t.Fatalf("Parse accepted %+v", r)
			}
		}
	})
}

// manualClock ticks when the test says so.
type manualClock struct{ c chan time.Time }

func (m manualClock) Now() time.Time                           { return time.Unix(0, 0) }
func (m manualClock) NewTicker(time.Duration) activator.Ticker { return m }
func (m manualClock) C() <-chan time.Time                      { return m.c }
func (m manualClock) Stop()                                    {}

func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revisions.json")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"revisions":[{"namespace":"default","name":"a"}]}`)
	clock := manualClock{c: make(chan time.Time)}
	reload := make(chan struct{})
	src := &Source{Path: path, Clock: clock, Reload: reload}
	applied := make(chan []string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- src.Watch(ctx, func(revs []activator.Revision) {
			var names []string
			for _, r := range revs {
				names = append(names, r.Name)
			}
			applied <- names
		})
	}()
	want := func(names ...string) {
		t.Helper()
		if diff := cmp.Diff(names, <-applied); diff != "" {
			t.Errorf("applied (-want +got):\n%s", diff)
		}
	}
	want("a")
	write(`{"revisions":[{"namespace":"default","name":"a"},{"namespace":"default","name":"b"}]}`)
	clock.c <- time.Time{}
	want("a", "b")
	write(`{"revisions":[{"namespace":"default","name":"c","timeout":"never"}]}`) // bad: ignored
	reload <- struct{}{}
	clock.c <- time.Time{} // unchanged bad content: nothing
	write(`{"revisions":[]}`)
	reload <- struct{}{}
	want()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch: %v", err)
	}
	select {
	case got := <-applied:
		t.Errorf("unexpected apply %v", got)
	default:
	}
}

func TestWatchBadFileAtStart(t *testing.T) {
	src := &Source{Path: filepath.Join(t.TempDir(), "missing.json")}
	if err := src.Watch(context.Background(), func([]activator.Revision) {}); err == nil {
		t.Error("Watch succeeded on a missing file")
	}
}
