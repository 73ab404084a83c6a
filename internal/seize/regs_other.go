//go:build !amd64

package seize

import (
	"fmt"
	"runtime"

	"github.com/ompd-go/ompd/target"
)

// getRegs is supported on amd64 only.
func getRegs(tid int) (target.Registers, uint64, error) {
	return target.Registers{}, 0, fmt.Errorf("seize: registers on %s: %w", runtime.GOARCH, target.ErrUnsupported)
}
