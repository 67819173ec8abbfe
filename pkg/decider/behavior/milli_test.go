package behavior

import "testing"

// TestToMilli: Quantity.MilliValue's rounding, away from zero, saturating.
func TestToMilli(t *testing.T) {
	tests := []struct {
		in   float64
		want int64
	}{
		{0, 0}, {0.1, 100}, {0.3, 300}, {20.666, 20666}, {20.6665, 20667}, {0.0001, 1},
		{1e-300, 1}, {-0.0001, -1}, {-2.5, -2500}, {15, 15000}, {1e20, maxMilli}, {-1e20, -maxMilli},
	}
	for _, tc := range tests {
		if got, ok := ToMilli(tc.in); !ok || got != tc.want {
			t.Errorf("ToMilli(%v) = %d, %v; want %d, true", tc.in, got, ok, tc.want)
		}
	}
}
