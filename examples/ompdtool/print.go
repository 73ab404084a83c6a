package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ompd-go/ompd"
)

// printText writes a snapshot the way a person debugging wants to read it.
func printText(w io.Writer, s *ompd.Snapshot) {
	fmt.Fprintf(w, "OpenMP runtime: _OPENMP %d, layout from %s, state tracking %s\n",
		s.OpenMPVersion, s.LayoutSource, onOff(s.StateTracking))
	fmt.Fprintf(w, "\nThreads (%d):\n", len(s.Threads))
	for _, t := range s.Threads {
		state := t.State
		if state == "" {
			state = "-"
		}
		if t.WaitID != 0 {
			state += fmt.Sprintf(" (wait id %#x)", t.WaitID)
		}
		fmt.Fprintf(w, "  gtid %-4d lwp %-8d thread_num %-4d %s\n", t.GTID, t.LWP, t.Num, state)
	}
	for _, t := range s.Threads {
		fmt.Fprintf(w, "\nThread gtid %d (lwp %d, pthread %#x):\n", t.GTID, t.LWP, t.Pthread)
		fmt.Fprintf(w, "  parallel regions, innermost first:\n")
		for _, p := range t.Parallel {
			fn := "-"
			if p.FunctionPC != 0 {
				fn = funcName(p.Function, p.FunctionPC)
			}
			fmt.Fprintf(w, "    level %d  active level %d  %d thread%s  %s\n",
				p.Level, p.ActiveLevel, p.NumThreads, plural(p.NumThreads), fn)
		}
		fmt.Fprintf(w, "  tasks, current first:\n")
		for _, k := range t.Tasks {
			fn := "-"
			if k.FunctionPC != 0 {
				fn = funcName(k.Function, k.FunctionPC)
			}
			final := ""
			if k.InFinal {
				final = " in-final"
			}
			fmt.Fprintf(w, "    %-24s %-22s%s  exit %s  enter %s\n", k.ID, k.Kind+final, "", frame(k.ExitFrame, k.ExitFlags), frame(k.EnterFrame, k.EnterFlags))
			fmt.Fprintf(w, "      function %s\n", fn)
		}
		fmt.Fprintf(w, "  ICVs: %s\n", icvLine(t.ICVs))
	}
	fmt.Fprintf(w, "\nAddress-space ICVs: %s\n", icvLine(s.ICVs))
	fmt.Fprintf(w, "\nDisplay control variables:\n")
	for _, v := range s.DisplayVars {
		fmt.Fprintf(w, "  %s\n", v.Raw)
	}
	fmt.Fprintf(w, "\nBreakpoints:\n")
	for _, b := range s.Breakpoints {
		fmt.Fprintf(w, "  %-26s %#x\n", b.Name, b.Addr)
	}
	if len(s.Errors) > 0 {
		fmt.Fprintf(w, "\nErrors:\n")
		for _, e := range s.Errors {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off (start the program with OMP_DEBUG=enabled)"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func funcName(sym string, pc uint64) string {
	if sym == "" {
		return fmt.Sprintf("%#x", pc)
	}
	return fmt.Sprintf("%s (%#x)", sym, pc)
}

func frame(addr uint64, flags string) string {
	if addr == 0 {
		return "-"
	}
	return fmt.Sprintf("%#x [%s]", addr, flags)
}

func icvLine(icvs []ompd.ICVValue) string {
	parts := make([]string, len(icvs))
	for i, v := range icvs {
		parts[i] = v.Name + "=" + v.Value
	}
	return strings.Join(parts, " ")
}
