// Command dlvthreads lists the OpenMP threads of a program being debugged
// in dlv, at the user's stop, without disturbing the session: the start of
// a Delve extension. Run the program under a headless server that takes
// several clients,
//
//	OMP_DEBUG=enabled dlv exec --headless --accept-multiclient --api-version 2 --listen 127.0.0.1:4040 ./prog
//
// debug as usual (dlv connect 127.0.0.1:4040, or an editor), and at a stop
// run
//
//	dlvthreads 127.0.0.1:4040
//
// A tool that embeds Delve itself passes its *proc.Target to delve.New
// (package target/delve) for the same target.Target, and calls list with
// it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/delverpc"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dlvthreads HOST:PORT")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Stdout, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "dlvthreads:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, addr string) error {
	t, err := delverpc.Dial(ctx, addr) // reads only; the user's session goes on
	if err != nil {
		return err
	}
	defer t.Close()
	return list(w, t)
}

// list prints each OpenMP thread of t: its global thread id, its LWP, its
// number in its team, its state, and the level and size of its innermost
// region.
func list(w io.Writer, t target.Target) error {
	as, err := ompd.Open(t)
	if err != nil {
		return err
	}
	defer as.Close()
	for th, err := range as.Threads() {
		if err != nil {
			return err
		}
		lwp, _ := th.OSThread(ompd.LWPID)
		fmt.Fprintf(w, "gtid %d lwp %d", th.GTID(), lwp)
		if n, err := th.Num(); err == nil {
			fmt.Fprintf(w, " thread %d", n)
		}
		if st, _, err := th.State(); err == nil {
			fmt.Fprintf(w, " %s", st)
		}
		if p, err := th.CurrentParallel(); err == nil {
			level, _ := p.Level()
			size, _ := p.NumThreads()
			fmt.Fprintf(w, " level %d of %d threads", level, size)
		}
		fmt.Fprintln(w)
	}
	return nil
}
