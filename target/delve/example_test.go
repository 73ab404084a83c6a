package delve_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-delve/delve/pkg/proc"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/target/delve"
)

// Launch an OpenMP program, stop it where it calls stopme, and print its
// threads with their innermost parallel regions.
func Example() {
	ctx := context.Background()
	p, err := delve.Launch(context.Background(), []string{"./prog", "arg"}, delve.WithExtraEnv("OMP_DEBUG=enabled"))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Kill()
	if _, err := p.RunToFunction(ctx, "stopme"); err != nil {
		log.Fatal(err)
	}
	as, err := ompd.Open(p)
	if err != nil {
		log.Fatal(err)
	}
	threads, err := ompd.Collect(as.Threads())
	if err != nil {
		log.Fatal(err)
	}
	for _, th := range threads {
		lwp, _ := th.OSThread(ompd.LWPID)
		state, _, _ := th.State()
		level := 0
		if par, err := th.CurrentParallel(); err == nil {
			level, _ = par.Level()
		}
		fmt.Printf("thread %d (lwp %d): %v at level %d\n", th.GTID(), lwp, state, level)
	}
}

// Print the parallel regions of a program as they begin and end.
func ExampleProcess_WatchEvents() {
	ctx := context.Background()
	p, err := delve.Launch(context.Background(), []string{"./prog"}, delve.WithExtraEnv("OMP_DEBUG=enabled"))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Kill()
	// Runs the program until the OpenMP runtime has initialized itself.
	as, err := p.OpenRuntime(ctx)
	if err != nil {
		log.Fatal(err)
	}
	err = p.WatchEvents(ctx, as, func(ev delve.Event) bool {
		switch ev.Kind {
		case delve.ParallelBegin, delve.ParallelEnd:
			level, _ := ev.Parallel.Level()
			fmt.Printf("%v in lwp %d, level %d\n", ev.Kind, ev.TID, level)
		}
		return true
	})
	if err != nil {
		log.Fatal(err)
	}
	status, _ := p.ExitStatus()
	fmt.Println("exit status", status)
}

// Use ompd-go from an existing Delve session: wrap its stopped target, and
// refresh after every resume.
func ExampleNew() {
	var sessionTarget = delveSessionTarget() // *proc.Target of the session
	t, err := delve.New(sessionTarget)
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	as, err := ompd.Open(t)
	if err != nil {
		log.Fatal(err)
	}
	defer as.Close()
	// ... the session continues the process and it stops again ...
	t.Refresh()
	as.Refresh()
}

func delveSessionTarget() *proc.Target { return nil }
