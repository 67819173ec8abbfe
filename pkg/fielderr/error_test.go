package fielderr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestErrorText(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"a key", &Error{Source: "config-autoscaler", Key: "stable-window", Value: "3s", Rule: "must be within [6s, 1h]", Fix: "set 6s to 1h"},
			`config-autoscaler "stable-window" = "3s": must be within [6s, 1h]; set 6s to 1h`},
		{"a defaulted key", &Error{Source: "config-autoscaler", Key: "max-scale", Value: "0", Defaulted: true, Rule: "r", Fix: "f"},
			`config-autoscaler "max-scale" = "0" (default): r; f`},
		{"a field inside a document", &Error{Field: "scaleUp.selectPolicy", FieldValue: `"Fastest"`, Rule: "r", Fix: "f"},
			`scaleUp.selectPolicy = "Fastest": r; fix: f`},
		{"a whole document", &Error{Rule: "is empty", Fix: "remove it"}, "is empty; fix: remove it"},
		{"a field placed in its annotation", (&Error{Field: "[0].target", FieldValue: "0", Rule: "r", Fix: "f"}).In("annotation", "k", "[x]"),
			`annotation "k" = "[x]": [0].target = 0: r; f`},
		{"a whole document placed in its annotation", (&Error{Rule: "is empty", Fix: "f"}).In("annotation", "k", ""),
			`annotation "k" = "": is empty; f`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	a, b, c := &Error{Key: "a"}, &Error{Key: "b"}, &Error{Key: "c"}
	err := errors.Join(a, fmt.Errorf("not a field error"), errors.Join(b, c))
	if diff := cmp.Diff([]*Error{a, b, c}, Errors(err)); diff != "" {
		t.Errorf("Errors (-want +got):\n%s", diff)
	}
	if got := Errors(nil); got != nil {
		t.Errorf("Errors(nil) = %v, want nil", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"scaleup", "scaleUp", 1}, {"same", "same", 0}} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
