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

// releases maps the newest GOMP_ symbol version of a libgomp to the GCC
// releases that shipped it (each GCC release that changed libgomp's ABI
// added one; libgomp.map).
var releases = []struct{ node, gcc string }{
	{"GOMP_1.0", "GCC 4.2 or 4.3"},
	{"GOMP_2.0", "GCC 4.4 to 4.6"},
	{"GOMP_3.0", "GCC 4.7 or 4.8"},
	{"GOMP_4.0", "GCC 4.9"},
	{"GOMP_4.0.1", "GCC 5"},
	{"GOMP_4.5", "GCC 6 to 8"},
	{"GOMP_5.0", "GCC 9 or 10"},
	{"GOMP_5.0.1", "GCC 11"},
	{"GOMP_5.1", "GCC 12"},
	{"GOMP_5.1.1", "GCC 13"},
	{"GOMP_5.1.2", "GCC 14"},
	{"GOMP_6.0", "GCC 15"},
	{"GOMP_6.0.1", "GCC 16"},
}

// Release names the GCC release(s) whose libgomp has node as its newest
// GOMP_ symbol version ("GCC 13" for GOMP_5.1.1), "a GCC newer than 14"
// past the last one known, and "" for what is no GOMP_ version.
func Release(node string) string {
	if !strings.HasPrefix(node, "GOMP_") || strings.HasPrefix(node, "GOMP_PLUGIN") {
		return ""
	}
	for _, r := range releases {
		if r.node == node {
			return r.gcc
		}
	}
	last := releases[len(releases)-1]
	if Less(last.node[len("GOMP_"):], node[len("GOMP_"):]) {
		return "a GCC newer than " + strings.TrimPrefix(last.gcc, "GCC ")
	}
	return ""
}
