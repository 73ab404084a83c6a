package kmp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every hidden name of the runtime this package reads is in stockNames, so
// that internal/kmp/gen records how to find it in a stripped runtime. The
// OMPD tables' entries come from the runtime's own ompd_init, __kmp_gtid
// (a thread-local variable) and __kmpc_fork_call (exported) from the
// dynamic symbol table. moment.go names functions it meets in the stacks
// of threads at breakpoints; it looks none up.
func TestStockNamesComplete(t *testing.T) {
	name := regexp.MustCompile(`^(__kmp_[a-z0-9_]+|ompd_[a-z0-9_]+)$`)
	dynamic := map[string]bool{"__kmp_gtid": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") || file == "known_releases.go" || file == "moment.go" {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			bl, ok := n.(*ast.BasicLit)
			if !ok || bl.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(bl.Value)
			if err != nil || !name.MatchString(v) || dynamic[v] {
				return true
			}
			for _, p := range []string{"ompd_access__", "ompd_sizeof__", "ompd_bitfield__"} {
				if strings.HasPrefix(v, p) {
					return true
				}
			}
			if !slices.Contains(stockNames, v) {
				t.Errorf("%s: %q is read but not in stockNames", fset.Position(bl.Pos()), v)
			}
			return true
		})
	}
}
