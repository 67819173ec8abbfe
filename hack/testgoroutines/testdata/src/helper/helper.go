package helper

import "testing"

// Must ends the test through another package.
func Must(t testing.TB, err error) { // want Must:`endsTest\(t.Fatal at helper.go:9\)`
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Log only logs.
func Log(t testing.TB, msg string) { t.Log(msg) }
