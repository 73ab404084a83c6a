package ompdtest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ompd-go/ompd"
)

// The invariants that every answer of the package keeps, whatever the
// target's memory holds: the mutation harness on real cores
// (target/core) and FuzzWalk on synthetic runtimes check them. A broken
// invariant is reported as "invariant NAME: details".

// walkLimit bounds the walks of handle chains: an Enclosing or Generating
// chain longer than this is endless.
const walkLimit = 10000

// PendingInvariants are the invariants whose failures the harness reports
// (in the test log, with a reproducer) but does not fail on yet, each with
// the fix it waits for. None is pending: the walk invariants of issue 15
// (items 2, 3, 4, 9) are kept by the per-stop decode of internal/kmp.
var PendingInvariants = map[string]string{}

// Sentinels are the errors every error of package ompd must match.
var Sentinels = []error{ompd.ErrUnavailable, ompd.ErrStaleHandle, ompd.ErrBadInput, ompd.ErrUnsupported, ompd.ErrIncomplete,
	ompd.ErrNeedsStateTracking, ompd.ErrIncompatible, ompd.ErrReadFailed, ompd.ErrWriteFailed, ompd.ErrCorrupt}

// SentinelProblems returns what is wrong with err, an error of package
// ompd from the call what on an address space that has not been
// refreshed: a message with a newline, no sentinel matched, a stale handle
// (its memory has not changed since Open: an object that reads as freed
// or replaced is corrupt). It returns nil for a nil err.
func SentinelProblems(what string, err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	if strings.Contains(err.Error(), "\n") {
		out = append(out, fmt.Sprintf("%s: error with a newline: %q", what, err))
	}
	if errors.Is(err, ompd.ErrStaleHandle) {
		out = append(out, fmt.Sprintf("invariant not stale: %s: a stale handle in memory that has not changed: %v", what, err))
	}
	for _, s := range Sentinels {
		if errors.Is(err, s) {
			return out
		}
	}
	return append(out, fmt.Sprintf("%s: error matches no sentinel: %v", what, err))
}

// Invariants takes a Snapshot and walks every thread's regions and tasks
// itself, and returns the broken invariants. The address space must not
// have been refreshed since Open (see SentinelProblems).
func Invariants(as *ompd.AddressSpace) []string {
	var out []string
	snap, err := as.Snapshot(context.Background())
	out = append(out, SentinelProblems("snapshot", err)...)
	if err == nil {
		out = append(out, checkSnapshot(snap)...)
	}
	ths, err := ompd.Collect(as.Threads())
	out = append(out, SentinelProblems("threads", err)...)
	reported := make(map[string]bool)
	if snap != nil {
		for _, e := range snap.Errors {
			about, _, _ := strings.Cut(e, ": ")
			reported[about] = true
		}
	}
	for _, th := range ths {
		rp, rerr := walkRegions(th)
		tp, terr := walkTasks(th)
		out = append(append(out, rp...), tp...)
		if snap != nil {
			out = append(out, cutReported(reported, th, "parallel chain", rerr)...)
			out = append(out, cutReported(reported, th, "task chain", terr)...)
		}
	}
	return out
}

// cutReported checks that a chain the handles could not walk to its
// natural end (the error that ended it is not ErrUnavailable) is reported
// in the snapshot's errors, under the thread's id and the chain's name or
// as an error of the whole thread.
// reported is the set of what a snapshot's errors are about (the text
// before the first ": "), made once per snapshot: a corrupt thread table
// gives tens of thousands of threads and errors.
func cutReported(reported map[string]bool, th ompd.Thread, chain string, end error) []string {
	if end == nil || errors.Is(end, ompd.ErrUnavailable) {
		return nil
	}
	id := th.String()
	if reported[id+" "+chain] || reported[id+" thread"] {
		return nil
	}
	return []string{fmt.Sprintf("invariant cut reported: thread %v: its %s ends with %v, which the snapshot does not report", th, chain, end)}
}

// checkSnapshot checks what a Snapshot says about each thread: region
// levels are >= 0 and fall strictly from the innermost region outwards,
// active levels lie in [0, level], team sizes are >= 1 and the thread's
// number is below its team's size.
func checkSnapshot(s *ompd.Snapshot) []string {
	var out []string
	for _, e := range s.Errors {
		if strings.Contains(e, "\n") {
			out = append(out, fmt.Sprintf("snapshot error with a newline: %q", e))
		}
		if strings.Contains(e, ompd.ErrStaleHandle.Error()) {
			out = append(out, fmt.Sprintf("invariant not stale: snapshot error: %s", e))
		}
	}
	for _, th := range s.Threads {
		for i, p := range th.Parallel {
			if p.Level < 0 {
				out = append(out, fmt.Sprintf("invariant level>=0: thread %s region %d has level %d", th.ID, i, p.Level))
			}
			if i > 0 && p.Level >= th.Parallel[i-1].Level {
				out = append(out, fmt.Sprintf("invariant levels fall: thread %s region %d has level %d, inside one of level %d", th.ID, i, p.Level, th.Parallel[i-1].Level))
			}
			if p.ActiveLevel < 0 || p.ActiveLevel > p.Level {
				out = append(out, fmt.Sprintf("invariant active<=level: thread %s region %d has active level %d at level %d", th.ID, i, p.ActiveLevel, p.Level))
			}
			if p.NumThreads < 1 {
				out = append(out, fmt.Sprintf("invariant team size>=1: thread %s region %d has %d threads", th.ID, i, p.NumThreads))
			}
		}
		if len(th.Parallel) > 0 && th.Num >= th.Parallel[0].NumThreads {
			out = append(out, fmt.Sprintf("invariant num<size: thread %s is number %d in a team of %d", th.ID, th.Num, th.Parallel[0].NumThreads))
		}
	}
	return out
}

// walkRegions follows Enclosing from the thread's current region and
// checks the same invariants on the handles, and that the walk ends.
func walkRegions(th ompd.Thread) ([]string, error) {
	var out []string
	p, err := th.CurrentParallel()
	prev := -1
	for n := 0; err == nil; n++ {
		if n == walkLimit {
			return append(out, fmt.Sprintf("invariant walk ends: thread %v: Enclosing still answers after %d steps", th, n)), nil
		}
		lvl, lerr := p.Level()
		act, aerr := p.ActiveLevel()
		out = append(out, SentinelProblems("level", lerr)...)
		out = append(out, SentinelProblems("active level", aerr)...)
		if lerr == nil {
			if lvl < 0 {
				out = append(out, fmt.Sprintf("invariant level>=0: thread %v: Enclosing step %d at level %d", th, n, lvl))
				break
			}
			if prev >= 0 && lvl >= prev {
				out = append(out, fmt.Sprintf("invariant levels fall: thread %v: Enclosing step %d at level %d after %d", th, n, lvl, prev))
				break
			}
			if aerr == nil && (act < 0 || act > lvl) {
				out = append(out, fmt.Sprintf("invariant active<=level: thread %v: Enclosing step %d active level %d at level %d", th, n, act, lvl))
			}
			prev = lvl
		}
		p, err = p.Enclosing()
	}
	return append(out, SentinelProblems("enclosing", err)...), err
}

// walkTasks follows Generating from the thread's current task: the walk
// must end, and the levels of the tasks' regions never climb (a task's
// generating task runs in its region or in an enclosing one). It returns
// the error that ended it.
func walkTasks(th ompd.Thread) ([]string, error) {
	var out []string
	tk, err := th.CurrentTask()
	prev := -1
	for n := 0; err == nil; n++ {
		if n == walkLimit {
			return append(out, fmt.Sprintf("invariant walk ends: thread %v: Generating still answers after %d steps", th, n)), nil
		}
		if p, perr := tk.Parallel(); perr == nil {
			if lvl, lerr := p.Level(); lerr == nil {
				if prev >= 0 && lvl > prev {
					out = append(out, fmt.Sprintf("invariant task levels fall: thread %v: Generating step %d in a region of level %d after %d", th, n, lvl, prev))
					break
				}
				prev = lvl
			}
		}
		tk, err = tk.Generating()
	}
	return append(out, SentinelProblems("generating", err)...), err
}

// InvariantOf returns the name of the invariant a problem breaks, "" for
// other problems.
func InvariantOf(p string) string {
	name, ok := strings.CutPrefix(p, "invariant ")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, ":")
	return name
}

// MaxBacktraceFrames is the most frames a backtrace taken with the
// default options may have.
const MaxBacktraceFrames = 256

// BacktraceInvariants takes a Snapshot with backtraces and returns the
// broken invariants of its stacks: a backtrace ends (at most
// MaxBacktraceFrames frames) and climbs the stack (each frame's CFA, where
// known, above its callee's: a stack whose frames loop is cut, not
// walked around).
func BacktraceInvariants(ctx context.Context, as *ompd.AddressSpace) []string {
	snap, err := as.Snapshot(ctx, ompd.WithBacktraces())
	out := SentinelProblems("snapshot with backtraces", err)
	if err != nil {
		return out
	}
	for _, th := range snap.Threads {
		if len(th.Frames) > MaxBacktraceFrames {
			out = append(out, fmt.Sprintf("invariant backtrace ends: thread %s has %d frames", th.ID, len(th.Frames)))
		}
		var prev uint64
		for i, f := range th.Frames {
			if f.CFA == 0 {
				continue
			}
			if prev != 0 && f.CFA <= prev {
				out = append(out, fmt.Sprintf("invariant backtrace climbs: thread %s frame %d has CFA %#x, its callee %#x", th.ID, i, f.CFA, prev))
				break
			}
			prev = f.CFA
		}
	}
	return out
}
