// Command ompdtool prints the OpenMP state of a stopped program: its threads
// with their states, the nest of parallel regions, each thread's task chain,
// the ICVs, the display control variables and the runtime's breakpoints. It
// is built on the public API of github.com/ompd-go/ompd only.
//
// Usage:
//
//	ompdtool [-json] core EXE CORE
//
// The program must use LLVM's OpenMP runtime; states and task frames need it
// to have been started with OMP_DEBUG=enabled.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ompdtool:", err)
		os.Exit(1)
	}
}

const usage = `usage: ompdtool [-json] core EXE CORE`

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ompdtool", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v\n%s", err, usage)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return errors.New(usage)
	}
	switch rest[0] {
	case "core":
		if len(rest) != 3 {
			return errors.New(usage)
		}
		c, err := core.Open(rest[1], rest[2])
		if err != nil {
			return err
		}
		defer c.Close()
		return inspect(ctx, c, *asJSON, out)
	}
	return fmt.Errorf("unknown mode %q\n%s", rest[0], usage)
}

// inspect opens the OpenMP address space of t and prints its snapshot.
func inspect(ctx context.Context, t target.Target, asJSON bool, out io.Writer) error {
	as, err := ompd.Open(t)
	if err != nil {
		return err
	}
	defer as.Close()
	s, err := as.Snapshot(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	printText(out, s)
	return nil
}
