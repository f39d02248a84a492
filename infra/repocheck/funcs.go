package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"strings"
)

// longFuncs lists the functions longer than max lines in the production
// Go files of dir (tests excluded) among tracked: a long decision is split
// into a pure function and its effects, which keeps each readable.
func longFuncs(tracked []string, dir string, max int) []string {
	var out []string
	fset := token.NewFileSet()
	for _, f := range tracked {
		if path.Dir(f) != dir || !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", f, err))
			continue
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > max {
				out = append(out, fmt.Sprintf("%s:%d: func %s is %d lines, over the %d-line limit (decide apart from act)", f, fset.Position(fn.Pos()).Line, fn.Name.Name, n, max))
			}
		}
	}
	return out
}
