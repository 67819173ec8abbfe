package a

import (
	"errors"
	"sync"
	"testing"

	"helper"
)

func skipWithout(t *testing.T) { t.Skip("no tool") } // want skipWithout:`endsTest\(t.Skip at a.go:11\)`

func twoDeep(t *testing.T) { skipWithout(t) } // want twoDeep:`endsTest\(t.Skip at a.go:11\)`

func throughLater(t *testing.T) { declaredLater(t) } // want throughLater:`endsTest\(t.FailNow`

func declaredLater(t *testing.T) { t.FailNow() } // want declaredLater:`endsTest\(t.FailNow at a.go:17\)`

func logs(t *testing.T) { t.Errorf("fine from a goroutine") }

type env struct{}

func (env) wait(t *testing.T) { t.Fatalf("waited") } // want wait:`endsTest\(t.Fatalf`

func subtests(t *testing.T) { t.Run("x", func(t *testing.T) { t.Fatal("a subtest may") }) }

func TestDirect(t *testing.T) { // want TestDirect:`endsTest`
	go func() {
		t.Fatal("x") // want `t.Fatal called from a goroutine`
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		skipWithout(t)                  // want `skipWithout is called from a goroutine with a testing value and may call t.Skip`
		twoDeep(t)                      // want `twoDeep is called from a goroutine .* may call t.Skip`
		throughLater(t)                 // want `throughLater is called from a goroutine .* may call t.FailNow`
		env{}.wait(t)                   // want `wait is called from a goroutine .* may call t.Fatalf`
		helper.Must(t, errors.New("x")) // want `Must is called from a goroutine .* may call t.Fatal`
		logs(t)
		helper.Log(t, "fine")
		subtests(t)
	}()
	go skipWithout(t) // want `skipWithout is called from a goroutine`
	var wg sync.WaitGroup
	wg.Go(func() {
		t.SkipNow() // want `t.SkipNow called from a goroutine`
	})
	wg.Wait()
	<-done
	skipWithout(t) // on the test goroutine: fine
}
