package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
)

// unreadable reports an error of ompd.Open that leaves the program's
// threads worth printing: an OpenMP runtime is there but cannot be read
// (stripped, and no table or debug information fits it).
func unreadable(err error) bool {
	return errors.Is(err, ompd.ErrIncompatible) && !errors.Is(err, ompd.ErrNoRuntime)
}

// printOSThreads prints what needs no knowledge of the OpenMP runtime:
// the target's threads and, with -bt, their stacks, one line a thread
// (innermost function first, as the summary's stacks).
func (o *options) printOSThreads(ctx context.Context, t target.Target, out io.Writer) {
	ths, err := t.Threads()
	if err != nil {
		fmt.Fprintf(out, "The OpenMP runtime cannot be read; the threads cannot be listed either: %v\n", err)
		return
	}
	fmt.Fprintf(out, "The OpenMP runtime cannot be read (see the error below); what needs no runtime knowledge:\n\n%d thread%s:\n", len(ths), plural(len(ths)))
	loc, _ := t.(target.CodeLocator)
	for _, th := range ths {
		line := fmt.Sprintf("  lwp %d", th.ID)
		if th.Pointer != 0 {
			line += fmt.Sprintf(" (pthread %#x)", th.Pointer)
		}
		if o.bt {
			line += ": " + stackLine(ctx, t, loc, th.ID)
		}
		fmt.Fprintln(out, line)
	}
	fmt.Fprintln(out)
}

// stackLine unwinds a thread and names its frames: "f < g < h".
func stackLine(ctx context.Context, t target.Target, loc target.CodeLocator, tid uint64) string {
	st, err := unwind.Thread(ctx, t, tid, unwind.Options{})
	if err != nil {
		return "(stack not read: " + err.Error() + ")"
	}
	var names []string
	for i := range st.Frames {
		f := &st.Frames[i]
		name := fmt.Sprintf("%#x", f.PC)
		if loc != nil {
			if cl, err := loc.LocateCode(f.LookupPC()); err == nil {
				switch {
				case cl.Function != "":
					name, _, _ = strings.Cut(cl.Function, "@")
				case cl.Object != "":
					name = "?? in " + filepath.Base(cl.Object)
				}
			}
		}
		names = append(names, name)
	}
	if !st.Complete() && st.End != nil {
		names = append(names, "(stopped: "+st.End.Error()+")")
	}
	return strings.Join(names, " < ")
}
