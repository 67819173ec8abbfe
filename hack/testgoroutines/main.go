// Command testgoroutines reports calls that end a test (Fatal, Fatalf,
// FailNow, Skip, Skipf, SkipNow of a *testing.T, *testing.B, *testing.F or
// testing.TB) made from a goroutine the test started. Such a call ends only
// that goroutine (runtime.Goexit), not the test: the test goes on without
// the result it waits for, and fails later for the wrong reason, or passes.
//
// go vet's testinggoroutine analyzer sees only the calls written in the
// goroutine's own function literal. This one also follows the calls the
// goroutine makes to functions given a testing value, in this package and
// across packages (through facts), to any depth: runHey(t, ...) in a
// goroutine is reported when runHey, or anything it passes t to, may call
// t.Fatal or t.Skip.
//
// A goroutine is a go statement, or a function passed to a method named Go
// (sync.WaitGroup.Go, errgroup.Group.Go).
//
//	go run ./hack/testgoroutines ./...
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"
)

func main() { singlechecker.Main(Analyzer) }
