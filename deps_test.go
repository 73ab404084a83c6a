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

// TestDeps: a debugger that brings its own Target gets the API and no
// network code: fetching debug files belongs to the targets that are asked
// to (target/debuginfod).
func TestDeps(t *testing.T) {
	for _, p := range goList(t, "-deps", ".") {
		if p == "net/http" || p == "crypto/tls" || strings.HasSuffix(p, "/target/debuginfod") {
			t.Errorf("package ompd depends on %s", p)
		}
	}
}
