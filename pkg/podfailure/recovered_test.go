package podfailure

import (
	"testing"
	"time"
)

// TestRecovered: a replica ready for a moment between two crashes is no
// recovery (with when to look again); one ready for the settle time is;
// a ready pod of another template (a fix) is at once.
func TestRecovered(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	f := Failure{Reason: ReasonContainerCrashedAfterStart, Pod: "a", Container: "app", Template: "5d8f"}
	ready := func(name, template string, since time.Duration) Pod {
		return Pod{Name: name, Ready: true, Template: template, ReadySince: t0.Add(since)}
	}
	cases := []struct {
		name    string
		pods    []Pod
		ok      bool
		recheck time.Duration
	}{
		{name: "none ready", pods: []Pod{{Name: "a", Template: "5d8f"}}},
		{name: "ready for a moment", pods: []Pod{ready("a", "5d8f", -2*time.Second)}, recheck: 28 * time.Second},
		{name: "the nearest of two", pods: []Pod{ready("a", "5d8f", -2*time.Second), ready("b", "5d8f", -25*time.Second)}, recheck: 5 * time.Second},
		{name: "ready for the settle time", pods: []Pod{ready("a", "5d8f", -30*time.Second)}, ok: true},
		{name: "a new template", pods: []Pod{ready("b", "77aa", 0)}, ok: true},
		{name: "ready since unknown", pods: []Pod{{Name: "a", Ready: true, Template: "5d8f"}}, ok: true},
		{name: "being deleted", pods: []Pod{{Name: "a", Ready: true, Deleting: true, Template: "77aa"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, recheck := Recovered(tc.pods, f, t0, 30*time.Second)
			if ok != tc.ok || recheck != tc.recheck {
				t.Errorf("Recovered = %v, %v; want %v, %v", ok, recheck, tc.ok, tc.recheck)
			}
		})
	}
	if ok, _ := Recovered([]Pod{ready("a", "", 0)}, Failure{Reason: ReasonContainerOOMKilled}, t0, 30*time.Second); !ok {
		t.Error("a failure of no known template: a ready pod is a recovery")
	}
	if ok, _ := Recovered([]Pod{ready("a", "5d8f", 0)}, Failure{Reason: ReasonImagePullFailed, Template: "5d8f"}, t0, 30*time.Second); !ok {
		t.Error("a pod that could not start is ready (the image was loaded): a recovery at once")
	}
}
