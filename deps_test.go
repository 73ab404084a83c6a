package ompd_test

import (
	"os/exec"
	"strings"
	"testing"
)

// goList runs go list with the given arguments in the module root and
// returns its output's lines. The go command is on PATH in every test
// (go test puts its own first).
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// TestDeps: the API package imports, of this module, only the target
// interface and the runtime boundary (omprt, and runtimes, which lists the
// runtime packages): what it knows of any runtime comes through them.
//
// And a debugger that brings its own Target gets the API and no
// network code: fetching debug files belongs to the targets that are asked
// to (target/debuginfod).
func TestDeps(t *testing.T) {
	for _, p := range goList(t, "-deps", ".") {
		if p == "net/http" || p == "crypto/tls" || strings.HasSuffix(p, "/target/debuginfod") {
			t.Errorf("package ompd depends on %s", p)
		}
	}
	const mod = "github.com/ompd-go/ompd/"
	allowed := map[string]bool{mod + "target": true, mod + "internal/omprt": true, mod + "internal/runtimes": true}
	for _, p := range goList(t, "-f", `{{join .Imports "\n"}}`, ".") {
		if !strings.Contains(p, ".") && !strings.HasPrefix(p, "vendor/") {
			continue // the standard library
		}
		if !allowed[p] {
			t.Errorf("package ompd imports %s: only target and the runtime boundary (internal/omprt, internal/runtimes) are allowed", p)
		}
	}
}
