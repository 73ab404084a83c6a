package core

import (
	"debug/elf"
	"fmt"

	"github.com/ompd-go/ompd/internal/startenv"
	"github.com/ompd-go/ompd/target"
)

var _ target.EnvironReader = (*Core)(nil)

// Environ returns the environment the program started with, from its
// initial stack in the core (where its auxiliary vector, from the core's
// NT_AUXV note, places it). A 32-bit core, or a core without the stack's
// pages, gives an error.
func (c *Core) Environ() ([]string, error) {
	if c.d.class != elf.ELFCLASS64 {
		return nil, fmt.Errorf("core: the start-up environment of a 32-bit program: %w", target.ErrUnsupported)
	}
	return startenv.FromStack(c, c.d.order, c.d.auxv)
}
