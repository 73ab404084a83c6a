package nestview

import (
	"testing"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/fakeomp"
)

// TestNest describes program states on both runtimes' memory layouts and
// checks what Nest says of each thread. libgomp does not record a
// region's function (the library reads it from the threads' stacks, which
// fake memory does not have), so Nest leaves it out there.
func TestNest(t *testing.T) {
	for _, rt := range []fakeomp.Runtime{fakeomp.LLVM, fakeomp.GNU} {
		t.Run(rt.String(), func(t *testing.T) {
			// Four threads in "outer"; thread 3 starts "inner", a
			// region of 2.
			p := fakeomp.New(rt)
			outer := p.Initial().Parallel(4, "outer")
			inner := outer.Thread(3).Parallel(2, "inner")

			as, err := ompd.Open(p.Target())
			if err != nil {
				t.Fatal(err)
			}
			defer as.Close()
			in := map[fakeomp.Runtime]map[string]string{
				fakeomp.LLVM: {"outer": " in outer", "inner": " in inner"},
				fakeomp.GNU:  {},
			}[rt]
			for _, c := range []struct {
				th   *fakeomp.Thread
				want string
			}{
				{outer.Thread(0), "level 1: 4 threads" + in["outer"] + " < level 0"},
				{outer.Thread(1), "level 1: 4 threads" + in["outer"] + " < level 0"},
				{inner.Thread(0), "level 2: 2 threads" + in["inner"] + " < level 1: 4 threads" + in["outer"] + " < level 0"},
				{inner.Thread(1), "level 2: 2 threads" + in["inner"] + " < level 1: 4 threads" + in["outer"] + " < level 0"},
			} {
				th, err := as.ThreadByOSThread(ompd.LWPID, c.th.LWP())
				if err != nil {
					t.Fatal(err)
				}
				got, err := Nest(th)
				if err != nil {
					t.Fatal(err)
				}
				if got != c.want {
					t.Errorf("thread %d: Nest = %q, want %q", c.th.LWP(), got, c.want)
				}
			}
		})
	}
}
