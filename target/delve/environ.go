package delve

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/ompd-go/ompd/target"
)

var _ target.EnvironReader = (*Process)(nil)

// Environ returns the environment the process started with, as
// /proc/PID/environ shows it (the strings execve put on its initial stack).
func (p *Process) Environ() ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.pid))
	if err != nil {
		return nil, fmt.Errorf("delve: start-up environment: %w", err)
	}
	var env []string
	for _, kv := range bytes.Split(b, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, strings.Clone(string(kv)))
		}
	}
	return env, nil
}
