package stats

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBatchRoundTrip(t *testing.T) {
	in := []Stat{
		{Source: SourceActivator, PodName: "activator-1", Revision: "default/hello", Time: time.Unix(100, 0), Period: time.Second, AverageConcurrency: 3,
			RequestCount: 7},
		{Source: SourceActivator, PodName: "activator-1", Revision: "default/other", Time: time.Unix(100, 0), AverageConcurrency: 1, RequestCount: 1},
	}
	b, err := AppendBatch(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseBatch(b, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := ParseBatch(b, 1); !errors.Is(err, errInvalid) {
		t.Errorf("limit 1: err = %v, want ErrInvalid", err)
	}
	if got, err := ParseBatch(b[:len(b)-1], 10); !errors.Is(err, errShort) || len(got) != 1 {
		t.Errorf("cut batch: %d stats, err %v; want 1 and ErrShort", len(got), err)
	}
	if got, err := ParseBatch(nil, 10); err != nil || len(got) != 0 {
		t.Errorf("empty batch: %v, %v", got, err)
	}
}

func FuzzParseBatch(f *testing.F) {
	b, _ := AppendBatch(nil, []Stat{{Source: SourceActivator, Revision: "a/b", AverageConcurrency: 1}})
	f.Add(b)
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, err := ParseBatch(data, 100)
		if err != nil {
			return
		}
		for _, s := range ss {
			checkFinite(t, s)
		}
		again, err := AppendBatch(nil, ss)
		if err != nil {
			t.Fatalf("decoded batch does not encode: %v", err)
		}
		if string(again) != string(data) {
			t.Fatalf("batch encoding is not canonical")
		}
	})
}
