package plot

import (
	"bytes"
	"strings"
	"testing"
)

func TestTradeoff(t *testing.T) {
	pts := []TradeoffPoint{
		{Label: "Knative's defaults", Series: "knative", CostReplicaSeconds: 3600, ColdStartShare: 0.006, Front: true},
		{Label: "keep 10m", Series: "knative", CostReplicaSeconds: 9000, ColdStartShare: 0.001},
		{Label: "2m", Series: "learned", CostReplicaSeconds: 3500, ColdStartShare: 0.002, Front: true},
		{Label: "min-scale 1", CostReplicaSeconds: 360000, ColdStartShare: 0},
	}
	var b bytes.Buffer
	if err := Tradeoff(&b, "a title", pts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "a title", "keep 10m", "min-scale 1", "Pareto front", "cost in replica-hours"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	if err := Tradeoff(&b, "t", nil); err == nil {
		t.Error("no points drew a chart")
	}
}
