// Command readcore prints what the OpenMP runtime of a core file knows: the
// runtime, then each OpenMP thread with its state and the parallel regions
// it is in, innermost first. It is a start for a tool that reads cores:
// copy it.
//
//	readcore [-sysroot DIR] PROGRAM CORE
//
// -sysroot names a copy of the machine the core was made on, where its
// libraries are looked for (a core of another machine).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/target/core"
)

func main() {
	sysroot := flag.String("sysroot", "", "look for the core's libraries under `DIR`")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: readcore [-sysroot DIR] PROGRAM CORE")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Stdout, flag.Arg(0), flag.Arg(1), *sysroot); err != nil {
		fmt.Fprintln(os.Stderr, "readcore:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, program, corefile, sysroot string) error {
	var opts []core.Option
	if sysroot != "" {
		opts = append(opts, core.WithSysroot(sysroot))
	}
	c, err := core.Open(ctx, program, corefile, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	as, err := ompd.Open(c) // errors.Is(err, ompd.ErrNoRuntime): no OpenMP in it
	if err != nil {
		return err
	}
	defer as.Close()
	fmt.Fprintln(w, as.Runtime().Name, as.Runtime().Version)
	for th, err := range as.Threads() {
		if err != nil {
			return err
		}
		lwp, _ := th.OSThread(ompd.LWPID)
		state := "state unknown"
		if st, _, err := th.State(); err == nil {
			state = st.String()
		}
		fmt.Fprintf(w, "thread lwp %d: %s\n", lwp, state)
		for p, err := range th.Regions() { // innermost first
			if err != nil {
				return err
			}
			level, _ := p.Level()
			n, _ := p.NumThreads()
			fmt.Fprintf(w, "  level %d: %d threads", level, n)
			if fn, err := p.Function(); err == nil { // none at level 0
				fmt.Fprintf(w, " in %s", fn.Symbol)
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}
