package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/summary"
)

// view is what the text output shows beyond the summary.
type view struct {
	threads     bool  // every thread in full
	gtids       []int // these threads in full
	vars        bool  // display control variables
	breakpoints bool
}

func (o *options) view() view {
	return view{threads: o.threads, gtids: o.threadGTIDs, vars: o.vars, breakpoints: o.breakpoints}
}

// maxErrors is how many errors the text output lists when not asked for
// every thread.
const maxErrors = 10

// printText writes a snapshot the way a person debugging wants to read it:
// a summary of what the threads do, then what v asks for.
func printText(w io.Writer, s *ompd.Snapshot, sum *summary.Summary, v view) error {
	printHeader(w, s)
	printSummary(w, sum, false)
	if err := printDetails(w, s, v); err != nil {
		return err
	}
	printErrors(w, "", s.Errors, v.threads)
	return nil
}

func printHeader(w io.Writer, s *ompd.Snapshot) {
	states := trackingNote(s)
	name := s.Runtime
	if s.RuntimeVersion != "" {
		name += " " + s.RuntimeVersion
	}
	if name != "" {
		name += ", "
	}
	fmt.Fprintf(w, "OpenMP runtime: %s_OPENMP %d, layout from %s, %s\n",
		name, s.OpenMPVersion, s.LayoutSource, states)
}

// printSummary writes the groups of sum, with their ranks if withRanks.
func printSummary(w io.Writer, sum *summary.Summary, withRanks bool) {
	fmt.Fprintf(w, "\n%d thread%s", sum.Threads, plural(sum.Threads))
	if withRanks {
		fmt.Fprintf(w, " of %d rank%s (%s)", sum.Ranks.Len(), plural(sum.Ranks.Len()), sum.Ranks)
	}
	fmt.Fprintf(w, " in %d group%s:\n", len(sum.Groups), plural(len(sum.Groups)))
	for _, g := range sum.Groups {
		fmt.Fprintf(w, "  %d thread%s %s\n", g.Threads, plural(g.Threads), g.Describe())
		if withRanks {
			fmt.Fprintf(w, "      ranks %s (e.g. rank %d gtid %d)\n", g.Ranks, g.Example.Rank, g.Example.GTID)
		} else {
			fmt.Fprintf(w, "      gtids %s\n", g.GTIDs)
		}
	}
}

// printDetails writes the parts of s that v asks for.
func printDetails(w io.Writer, s *ompd.Snapshot, v view) error {
	if v.threads {
		printThreadTable(w, s.Threads)
	}
	for _, t := range s.Threads {
		if v.threads {
			printThread(w, t)
		}
	}
	for _, gtid := range v.gtids {
		t, ok := findThread(s.Threads, gtid)
		if !ok {
			return fmt.Errorf("no OpenMP thread with global thread id %d", gtid)
		}
		if !v.threads {
			printThread(w, t)
		}
	}
	if v.threads || len(v.gtids) > 0 {
		line := icvLine(s.ICVs)
		switch {
		case len(s.ICVs) == 0 && needsDebugFile(s):
			line = "none read: " + debugFileNote
		case fromEnv(s.ICVs):
			line += "  (* from the program's start-up environment: " + debugFileNote + ")"
		}
		fmt.Fprintf(w, "\nAddress-space ICVs: %s\n", line)
	}
	if v.vars {
		fmt.Fprintf(w, "\nDisplay control variables:\n")
		if len(s.DisplayVars) == 0 {
			switch u := unsupported(s, "display control variables"); {
			case u != "":
				fmt.Fprintf(w, "  none: %s\n", u)
			case needsDebugFile(s):
				fmt.Fprintf(w, "  none read: %s\n", debugFileNote)
			}
		}
		for _, cv := range s.DisplayVars {
			switch {
			case cv.Source == "environment":
				fmt.Fprintf(w, "  %-50s (the program's start-up environment)\n", cv.Raw)
			case cv.Stale:
				fmt.Fprintf(w, "  %-50s (start-up text, may be stale)\n", cv.Raw)
			case cv.Corrected && cv.RuntimeRaw != "":
				fmt.Fprintf(w, "  %-50s (the runtime recorded %s)\n", cv.Raw, strings.TrimPrefix(cv.RuntimeRaw, cv.Name+"="))
			case cv.Corrected:
				fmt.Fprintf(w, "  %-50s (the runtime recorded nothing)\n", cv.Raw)
			default:
				fmt.Fprintf(w, "  %s\n", cv.Raw)
			}
		}
	}
	if v.breakpoints {
		fmt.Fprintf(w, "\nBreakpoints:\n")
		for _, b := range s.Breakpoints {
			fmt.Fprintf(w, "  %-26s %#x\n", b.Name, b.Addr)
		}
		if u := unsupported(s, "breakpoints"); len(s.Breakpoints) == 0 && u != "" {
			fmt.Fprintf(w, "  none: %s\n", u)
		}
	}
	return nil
}

func findThread(ts []ompd.ThreadSnapshot, gtid int) (ompd.ThreadSnapshot, bool) {
	for _, t := range ts {
		if t.GTID == gtid {
			return t, true
		}
	}
	return ompd.ThreadSnapshot{}, false
}

// printErrors writes errs (prefixed by where), all of them or the first
// maxErrors.
func printErrors(w io.Writer, where string, errs []string, all bool) {
	if len(errs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%sErrors (%d):\n", where, len(errs))
	for i, e := range errs {
		if i == maxErrors && !all {
			fmt.Fprintf(w, "  ... %d more (-threads lists them all)\n", len(errs)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", e)
	}
}

func printThreadTable(w io.Writer, threads []ompd.ThreadSnapshot) {
	fmt.Fprintf(w, "\nThreads (%d):\n", len(threads))
	for _, t := range threads {
		state := t.State.String()
		if t.NoState {
			state = "-"
			if t.StateUnknown != "" {
				state += " (" + t.StateUnknown + ")"
			}
		}
		if t.WaitID != 0 {
			state += fmt.Sprintf(" (wait id %#x)", t.WaitID)
		}
		if t.Starting {
			state = "starting"
		}
		if t.NumTeams > 1 {
			state += fmt.Sprintf("  (team %d of %d)", t.TeamNum, t.NumTeams)
		}
		// A thread the runtime is still starting has no LWP and no
		// thread number yet, a worker waiting for its first region no
		// thread number: "-", not a made-up 0.
		lwp, num := "-", "-"
		if t.LWP != 0 {
			lwp = strconv.FormatUint(t.LWP, 10)
		}
		if !t.Starting && !t.NumUnknown {
			num = strconv.Itoa(t.Num)
		}
		fmt.Fprintf(w, "  gtid %-4d lwp %-8s thread_num %-4s %s\n", t.GTID, lwp, num, state)
	}
}

func printThread(w io.Writer, t ompd.ThreadSnapshot) {
	if t.Starting {
		fmt.Fprintf(w, "\nThread gtid %d (starting: no pthread id yet):\n", t.GTID)
	} else {
		fmt.Fprintf(w, "\nThread gtid %d (lwp %d, pthread %#x):\n", t.GTID, t.LWP, t.Pthread)
	}
	if t.NumTeams > 1 {
		fmt.Fprintf(w, "  team %d of a league of %d host teams\n", t.TeamNum, t.NumTeams)
	}
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
		fmt.Fprintf(w, "    %-24s %-22s%s  exit %s  enter %s\n", k.ID, k.Kind.String()+final, "", frame(k.ExitFrame, k.ExitFlags), frame(k.EnterFrame, k.EnterFlags))
		fmt.Fprintf(w, "      function %s\n", fn)
	}
	fmt.Fprintf(w, "  ICVs: %s\n", icvLine(t.ICVs))
	printFrames(w, t)
}

// printFrames writes the thread's backtrace as gdb does ("#N  0xPC in
// function (file:line)"), marking where each task of its chain begins
// (with its region level and what it waits in) and the runtime frames.
func printFrames(w io.Writer, t ompd.ThreadSnapshot) {
	if len(t.Frames) == 0 {
		return
	}
	fmt.Fprintf(w, "  backtrace:\n")
	task := "\x00"
	for _, f := range t.Frames {
		if f.Task != task {
			switch {
			case f.Task == "":
				fmt.Fprintf(w, "    -- outside the thread's tasks --\n")
			default:
				wait := ""
				if f.Wait != ompd.WaitNone {
					wait = ", waiting in " + f.Wait.String()
				}
				fmt.Fprintf(w, "    -- %s (level %d%s) --\n", f.Task, f.Level, wait)
			}
			task = f.Task
		}
		fn := f.Function
		if len(f.Inline) > 0 && f.Inline[0].Function != "" {
			fn = f.Inline[0].Function // gdb names the innermost inlined call
		}
		if fn == "" {
			fn = "??"
		}
		line := fmt.Sprintf("    #%-3d 0x%016x in %s", f.Index, f.PC, fn)
		if f.File != "" {
			line += fmt.Sprintf(" (%s:%d)", f.File, f.Line)
		} else if f.Object != "" {
			line += " from " + f.Object
		}
		for _, in := range f.Inline[min(1, len(f.Inline)):] {
			line += fmt.Sprintf("\n         inlined into %s (%s:%d)", in.Function, in.File, in.Line)
		}
		switch {
		case f.Folded > 1:
			line += fmt.Sprintf("  [runtime, %d frames]", f.Folded)
		case f.Runtime || f.InRuntimeCall:
			line += "  [runtime]"
		}
		fmt.Fprintln(w, line)
	}
	if t.StackEnd != "" {
		fmt.Fprintf(w, "    (backtrace stopped: %s)\n", t.StackEnd)
	}
}

// trackingNote says whether the runtime records thread states, and if it
// does not, why and how the states shown were had: the hint to start the
// program with OMP_DEBUG=enabled only where that would change something.
func trackingNote(s *ompd.Snapshot) string {
	noOMPD := slices.ContainsFunc(s.Unsupported, func(u string) bool { return strings.Contains(u, "built without OMPD support") })
	switch {
	case s.StateTracking:
		return "state tracking on"
	case !s.StatesInferred && noOMPD:
		return "state tracking off (the runtime is built without OMPD support)"
	case !s.StatesInferred:
		return "state tracking off (start the program with OMP_DEBUG=enabled)"
	case noOMPD:
		return "states inferred from the stacks (the runtime is built without OMPD support: it records none, whatever OMP_DEBUG says)"
	case strings.HasPrefix(s.Runtime, "LLVM"):
		return "states inferred from the stacks (the runtime records them only when the program is started with OMP_DEBUG=enabled)"
	}
	return "states inferred from the stacks"
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

func frame(addr uint64, flags ompd.FrameFlags) string {
	if addr == 0 {
		return "-"
	}
	return fmt.Sprintf("%#x [%s]", addr, flags)
}

// icvLine writes ICVs as name=value; a list of which only the start could
// be read (ICVValue.Incomplete) ends in ",...".
func icvLine(icvs []ompd.ICVValue) string {
	parts := make([]string, len(icvs))
	for i, v := range icvs {
		parts[i] = v.ICV.Name() + "=" + v.Value
		if v.Incomplete {
			parts[i] += ",..."
		}
		if v.Source == "environment" {
			parts[i] += "*"
		}
	}
	return strings.Join(parts, " ")
}

// fromEnv reports whether some of icvs come from the program's start-up
// environment.
func fromEnv(icvs []ompd.ICVValue) bool {
	for _, v := range icvs {
		if v.Source == "environment" {
			return true
		}
	}
	return false
}

// debugFileNote says why a libgomp read without its debug information
// shows no global ICVs or display control variables.
const debugFileNote = "libgomp's globals are hidden symbols: they need its debug information (a debug package, -debug-dir or debuginfod)"

// needsDebugFile reports whether s is of a libgomp read without its debug
// information (its layout from the table of known layouts), whose hidden
// globals could not be read.
func needsDebugFile(s *ompd.Snapshot) bool {
	return s.Runtime == "GNU libgomp" && s.LayoutSource == ompd.LayoutKnownTable
}

// unsupported is the reason s gives for the runtime not supporting what
// (an entry of Snapshot.Unsupported), "" if it gives none.
func unsupported(s *ompd.Snapshot, what string) string {
	for _, u := range s.Unsupported {
		if r, ok := strings.CutPrefix(u, what+": "); ok {
			return r
		}
	}
	return ""
}
