// Package nestview is a piece of a debugger's OpenMP view, with its unit
// test on fake runtime memory (nestview_test.go, package fakeomp): the
// pattern to copy to test a view of your own without a compiler, an
// OpenMP runtime or a process.
package nestview

import (
	"fmt"
	"strings"

	"github.com/ompd-go/ompd"
)

// Nest describes the parallel regions a thread is in, innermost first:
// "level 2: 2 threads in inner < level 1: 4 threads in outer < level 0".
// A region's outlined function is named where the runtime tells it.
func Nest(th ompd.Thread) (string, error) {
	var parts []string
	for p, err := range th.Regions() {
		if err != nil {
			return "", err
		}
		level, err := p.Level()
		if err != nil {
			return "", err
		}
		s := fmt.Sprintf("level %d", level)
		if level > 0 {
			n, err := p.NumThreads()
			if err != nil {
				return "", err
			}
			s += fmt.Sprintf(": %d threads", n)
			if fn, err := p.Function(); err == nil && fn.Symbol != "" {
				s += " in " + fn.Symbol
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " < "), nil
}
