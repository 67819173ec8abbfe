package autoscaler

import (
	"strings"
	"testing"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
)

// TestUpsertParsesDocuments: the service resolves revisions with the
// DocumentParser of its options, so a behavior annotation reaches the
// decider; without one it is refused, never ignored.
func TestUpsertParsesDocuments(t *testing.T) {
	ann := map[string]string{config.AnnotationBehavior: `{"scaleDown": {"stabilizationWindowSeconds": 60}}`}
	a := New(Options{Platform: &fakePlatform{pods: map[RevisionKey][]Pod{}}, Scraper: &fakeScraper{}, Documents: hpa.DocumentParser{}})
	if err := a.Upsert(hello, ann); err != nil {
		t.Fatal(err)
	}
	b := a.revisions[hello].cfg.rev.Behavior
	if b == nil || b.ScaleDown == nil || *b.ScaleDown.StabilizationWindowSeconds != 60 {
		t.Errorf("Behavior = %+v, want the annotation's, parsed", b)
	}
	err := a.Upsert(hello, map[string]string{config.AnnotationBehavior: `{"scaleDown": {"stabilizationWindowSeconds": -1}}`})
	if err == nil || !strings.Contains(err.Error(), "scaleDown.stabilizationWindowSeconds = -1") {
		t.Errorf("Upsert with an invalid behavior: %v", err)
	}

	a = New(Options{Platform: &fakePlatform{pods: map[RevisionKey][]Pod{}}, Scraper: &fakeScraper{}})
	if err := a.Upsert(hello, ann); err == nil || !strings.Contains(err.Error(), "hpa.DocumentParser") {
		t.Errorf("Upsert without a DocumentParser: %v, want the behavior refused", err)
	}
}
