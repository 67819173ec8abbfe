package main

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
)

// TestAnalyzer: testdata/src/a holds every way a goroutine may end a test
// (direct, through helpers one and two calls deep, in this package and
// another, go f(t), sync.WaitGroup.Go), each marked with the report it
// must draw, and calls that are fine (t.Errorf, t.Log, t.Run's subtests, on
// the test goroutine), which must draw none.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), Analyzer, "a")
}
