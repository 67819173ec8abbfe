package whatif

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArrivalSecond(t *testing.T) {
	tests := []struct {
		name      string
		minute, n int
		want      []int64
	}{
		{name: "one in the middle of the minute", minute: 1, n: 1, want: []int64{30}},
		{name: "two", minute: 1, n: 2, want: []int64{15, 45}},
		{name: "three", minute: 1, n: 3, want: []int64{10, 30, 50}},
		{name: "seven in minute 2", minute: 2, n: 7, want: []int64{64, 72, 81, 90, 98, 107, 115}},
		{name: "more than one a second", minute: 3, n: 150, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int64
			for i := range tt.n {
				got = append(got, arrivalSecond(tt.minute, i, tt.n))
			}
			if tt.want == nil {
				// Every arrival lies within its minute, in order.
				for i, s := range got {
					if s < 120 || s >= 180 || (i > 0 && s < got[i-1]) {
						t.Fatalf("arrival %d at second %d: want within [120, 180), in order", i, s)
					}
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("arrivals (-want +got):\n%s", diff)
			}
		})
	}
}

// TestArrivalSecondMatchesFormula pits the integer form against the
// contract's formula, 60*(m-1) + floor((i + 0.5) * 60 / n), for every n a
// minute of the development trace can hold at moderate sizes.
func TestArrivalSecondMatchesFormula(t *testing.T) {
	for n := 1; n <= 2000; n++ {
		for i := range n {
			want := 60*int64(4) + int64(math.Floor((float64(i)+0.5)*60/float64(n)))
			if got := arrivalSecond(5, i, n); got != want {
				t.Fatalf("ArrivalSecond(5, %d, %d) = %d, want %d", i, n, got, want)
			}
		}
	}
}

func TestArrivals(t *testing.T) {
	a := arrivals{counts: []uint32{2, 0, 1}}
	var got []int64
	for s, ok := a.next(); ok; s, ok = a.next() {
		got = append(got, s)
	}
	if diff := cmp.Diff([]int64{15, 45, 150}, got); diff != "" {
		t.Errorf("arrivals (-want +got):\n%s", diff)
	}
}
