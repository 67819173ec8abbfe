package stats

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPending(t *testing.T) {
	st := func(pod string, period time.Duration, conc float64) Stat {
		return Stat{PodName: pod, Period: period, AverageConcurrency: conc}
	}
	tests := []struct {
		name        string
		max         int
		add         []Stat
		want        []Stat
		wantDropped int
	}{
		{name: "nothing", want: nil},
		{name: "a newer window replaces the older, even with less load",
			add: []Stat{st("a", 1, 5), st("a", 1, 2)}, want: []Stat{st("a", 1, 2)}},
		{name: "the strongest poke is kept",
			add: []Stat{st("a", 0, 1), st("a", 0, 3), st("a", 0, 2)}, want: []Stat{st("a", 0, 3)}},
		{name: "by pod, windows before pokes",
			add:  []Stat{st("b", 0, 1), st("b", 1, 4), st("a", 0, 2), st("a", 1, 3)},
			want: []Stat{st("a", 1, 3), st("a", 0, 2), st("b", 1, 4), st("b", 0, 1)}},
		{name: "a pod past the bound is dropped and counted; a known pod still updates", max: 2,
			add:  []Stat{st("a", 1, 1), st("b", 1, 1), st("c", 1, 1), st("c", 0, 9), st("a", 1, 7)},
			want: []Stat{st("a", 1, 7), st("b", 1, 1)}, wantDropped: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Pending{Max: tt.max}
			for _, s := range tt.add {
				p.Add(s)
			}
			got, dropped := p.Take(nil)
			if diff := cmp.Diff(tt.want, got); diff != "" || dropped != tt.wantDropped {
				t.Errorf("Take (-want +got):\n%s\ndropped %d, want %d", diff, dropped, tt.wantDropped)
			}
			if again, d := p.Take(nil); len(again) != 0 || d != 0 || p.Len() != 0 {
				t.Errorf("a second Take = %v, %d dropped, %d slots; want empty", again, d, p.Len())
			}
		})
	}
}
