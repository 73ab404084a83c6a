// Package gompver picks the newest GOMP_ symbol version a libgomp defines,
// by which internal/gomp and its table generator (internal/gomp/gen) tell
// a libgomp release apart when its build-id is unknown.
package gompver

import (
	"fmt"
	"strings"
)

// Newer returns name if it is a GOMP_ symbol version (not GOMP_PLUGIN_)
// newer than newest, else newest; "" as newest is older than any.
func Newer(newest, name string) string {
	if !strings.HasPrefix(name, "GOMP_") || strings.HasPrefix(name, "GOMP_PLUGIN") {
		return newest
	}
	if newest == "" || Less(newest[len("GOMP_"):], name[len("GOMP_"):]) {
		return name
	}
	return newest
}

// Less compares dotted version numbers ("5.1" < "5.1.2"); a missing part
// counts as 0, a part as the number it starts with (0 if none).
func Less(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			fmt.Sscan(as[i], &x)
		}
		if i < len(bs) {
			fmt.Sscan(bs[i], &y)
		}
		if x != y {
			return x < y
		}
	}
	return false
}
