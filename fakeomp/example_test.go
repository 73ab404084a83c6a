package fakeomp_test

import (
	"fmt"
	"io"
	"os"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/fakeomp"
)

// waiters is a debugger's OpenMP view, the code under test: a line for
// each thread that waits, with its number in its team and its region's
// level, and what it waits for.
func waiters(w io.Writer, as *ompd.AddressSpace) error {
	for th, err := range as.Threads() {
		if err != nil {
			return err
		}
		state, _, err := th.State()
		if err != nil || !state.IsWait() {
			continue // working, or the runtime cannot tell
		}
		n, err := th.Num()
		if err != nil {
			return err
		}
		p, err := th.CurrentParallel()
		if err != nil {
			return err
		}
		level, err := p.Level()
		if err != nil {
			return err
		}
		what := map[ompd.State]string{
			ompd.StateWaitBarrierExplicit: "at a barrier",
			ompd.StateWaitLock:            "for a lock",
			ompd.StateWaitTaskwait:        "for its child tasks",
		}[state]
		if what == "" {
			what = state.String()
		}
		fmt.Fprintf(w, "thread %d at level %d waits %s\n", n, level, what)
	}
	return nil
}

// A test of a tool's OpenMP view on a program state it describes: four
// threads in a parallel region, one of them in a nested region of two.
func Example() {
	p := fakeomp.New(fakeomp.LLVM)
	outer := p.Initial().Parallel(4, "main._omp_fn.0")
	outer.Thread(1).SetState(ompd.StateWaitBarrierExplicit, 0)
	outer.Thread(2).SetState(ompd.StateWaitLock, 0x7f0000001000)
	inner := outer.Thread(3).Parallel(2, "main._omp_fn.1")
	inner.Thread(1).Task("work._omp_fn.2", false)
	inner.Thread(0).SetState(ompd.StateWaitTaskwait, 0)

	as, err := ompd.Open(p.Target())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer as.Close()
	if err := waiters(os.Stdout, as); err != nil {
		fmt.Println(err)
	}
	// Output:
	// thread 1 at level 1 waits at a barrier
	// thread 2 at level 1 waits for a lock
	// thread 0 at level 2 waits for its child tasks
}
