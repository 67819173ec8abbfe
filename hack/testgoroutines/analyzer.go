package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// Analyzer is the check; see the package comment.
var Analyzer = &analysis.Analyzer{
	Name:      "testgoroutines",
	Doc:       "reports t.Fatal, t.Skip and the like called, directly or through helpers, from a goroutine a test started",
	Run:       run,
	FactTypes: []analysis.Fact{new(endsTest)},
}

// endsTest marks a function that may end the test it is given: it calls
// Call (a method such as t.Fatalf) at At, directly or through its callees.
type endsTest struct {
	Call string
	At   string
}

func (*endsTest) AFact() {}

func (f *endsTest) String() string { return "endsTest(" + f.Call + " at " + f.At + ")" }

// ending are the methods of testing's types that stop the calling goroutine.
var ending = []string{"Fatal", "Fatalf", "FailNow", "Skip", "Skipf", "SkipNow"}

func run(pass *analysis.Pass) (any, error) {
	decls := map[*types.Func]*ast.FuncDecl{}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func); ok && takesTesting(fn) {
					decls[fn] = fd
				}
			}
		}
	}
	// Mark the functions of this package that may end a test, until no
	// new one is found (a helper may call a helper declared after it).
	for changed := true; changed; {
		changed = false
		for fn, fd := range decls {
			if pass.ImportObjectFact(fn, new(endsTest)) {
				continue
			}
			if call, at := firstEnding(pass, fd.Body); call != "" {
				pass.ExportObjectFact(fn, &endsTest{Call: call, At: at})
				changed = true
			}
		}
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			for _, g := range goroutines(pass, n) {
				reportIn(pass, g)
			}
			return true
		})
	}
	return nil, nil
}

// goroutines returns what node n runs in a new goroutine: the call of a go
// statement, or the function given to a method named Go.
func goroutines(pass *analysis.Pass, n ast.Node) []ast.Node {
	switch n := n.(type) {
	case *ast.GoStmt:
		if lit, ok := n.Call.Fun.(*ast.FuncLit); ok {
			return []ast.Node{lit.Body}
		}
		return []ast.Node{n.Call}
	case *ast.CallExpr:
		if !isGoMethod(pass, n) {
			return nil
		}
		var out []ast.Node
		for _, a := range n.Args {
			if lit, ok := a.(*ast.FuncLit); ok {
				out = append(out, lit.Body)
			}
		}
		return out
	}
	return nil
}

// isGoMethod reports whether call is of a method named Go, such as
// sync.WaitGroup.Go, which runs its function argument in a goroutine.
func isGoMethod(pass *analysis.Pass, call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Go" {
		return false
	}
	_, isMethod := pass.TypesInfo.Selections[sel]
	return isMethod
}

// isRun reports whether call is t.Run (or b.Run, f.Fuzz): its function
// runs in a goroutine of its own, as a test whose Fatal is legitimate.
func isRun(pass *analysis.Pass, call *ast.CallExpr) bool {
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Path() == "testing" && (fn.Name() == "Run" || fn.Name() == "Fuzz")
}

// reportIn reports every call in a goroutine's code that may end the test.
func reportIn(pass *analysis.Pass, g ast.Node) {
	ast.Inspect(g, func(n ast.Node) bool {
		if _, ok := n.(*ast.GoStmt); ok && n != g {
			return false // its own goroutine, inspected on its own
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if n != g && (isGoMethod(pass, call) || isRun(pass, call)) {
			return false // a goroutine of its own, or a subtest
		}
		if name := endingMethod(pass, call); name != "" {
			pass.Reportf(call.Pos(), "%s called from a goroutine: it ends the goroutine, not the test; "+
				"send the error to the test goroutine and fail there", name)
			return true
		}
		if fn, fact := callee(pass, call); fact != nil {
			pass.Reportf(call.Pos(), "%s is called from a goroutine with a testing value and may call %s (%s), "+
				"which ends the goroutine, not the test; return an error and fail on the test goroutine",
				fn.Name(), fact.Call, fact.At)
		}
		return true
	})
}

// firstEnding returns the first call in body that may end a test, and
// where it is; "" when there is none. Goroutines and function literals
// passed to t.Run in body are not the body's own code, and are skipped.
func firstEnding(pass *analysis.Pass, body *ast.BlockStmt) (call, at string) {
	ast.Inspect(body, func(n ast.Node) bool {
		if call != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt:
			return false
		case *ast.CallExpr:
			if isGoMethod(pass, n) || isRun(pass, n) {
				return false
			}
			if name := endingMethod(pass, n); name != "" {
				call, at = name, position(pass, n.Pos())
				return false
			}
			if _, fact := callee(pass, n); fact != nil {
				call, at = fact.Call, fact.At
				return false
			}
		}
		return true
	})
	return call, at
}

// endingMethod returns "t.Fatalf" and the like when call is such a method
// of a testing type, else "".
func endingMethod(pass *analysis.Pass, call *ast.CallExpr) string {
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "testing" || !slices.Contains(ending, fn.Name()) {
		return ""
	}
	recv := "t"
	if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
		recv = types.ExprString(sel.X)
	}
	return recv + "." + fn.Name()
}

// callee returns the function call calls and its endsTest fact, when the
// call gives it a testing value and it may end a test.
func callee(pass *analysis.Pass, call *ast.CallExpr) (*types.Func, *endsTest) {
	fn, ok := typeutil.Callee(pass.TypesInfo, call).(*types.Func)
	if !ok || !passesTesting(pass, call) {
		return nil, nil
	}
	fact := new(endsTest)
	if !pass.ImportObjectFact(fn.Origin(), fact) {
		return nil, nil
	}
	return fn, fact
}

// passesTesting reports whether a call gives a testing value: as an
// argument, or as the receiver of a method.
func passesTesting(pass *analysis.Pass, call *ast.CallExpr) bool {
	exprs := slices.Clone(call.Args)
	if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
		exprs = append(exprs, sel.X)
	}
	for _, e := range exprs {
		if isTesting(pass.TypesInfo.TypeOf(e)) {
			return true
		}
	}
	return false
}

// takesTesting reports whether fn has a parameter, or a receiver, of a
// testing type.
func takesTesting(fn *types.Func) bool {
	sig := fn.Type().(*types.Signature)
	if sig.Recv() != nil && isTesting(sig.Recv().Type()) {
		return true
	}
	for v := range sig.Params().Variables() {
		if isTesting(v.Type()) {
			return true
		}
	}
	return false
}

// isTesting reports whether t is *testing.T, *testing.B, *testing.F or
// testing.TB.
func isTesting(t types.Type) bool {
	if t == nil {
		return false
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := t.(*types.Named)
	if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != "testing" {
		return false
	}
	switch named.Obj().Name() {
	case "T", "B", "F", "TB":
		return true
	}
	return false
}

func position(pass *analysis.Pass, pos token.Pos) string {
	p := pass.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}
