// Package runtimes lists the OpenMP runtimes package ompd reads, one
// package each behind the omprt.Runtime boundary, and finds the one a
// target's program uses. Adding a runtime is writing its package and
// adding its opener to the list here: package ompd names none of them.
package runtimes

import (
	"errors"
	"fmt"

	"github.com/ompd-go/ompd/internal/errjoin"
	"github.com/ompd-go/ompd/internal/gomp"
	"github.com/ompd-go/ompd/internal/kmp"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// runtime is one runtime package: its name (for the runtimes that are
// loaded but cannot be read) and opener.
type runtime struct {
	name string
	open omprt.Opener
}

// all lists the runtime packages Open asks, in order.
var all = [...]runtime{{kmp.Name, kmp.Open}, {gomp.Name, gomp.Open}}

// Open asks every runtime package for its runtime in t and returns the one
// the program uses: when t holds several, the one with the most threads
// (the first listed on a tie). others names the rest, each that could not
// be read with why in parentheses.
//
// With none found, the error is the reason of the first runtime that is
// loaded but cannot be read, else that of a runtime a package did not
// find but could not rule out (omprt.Unidentified), else one matching
// omprt.ErrNoRuntime that says what each package looked for.
func Open(t target.Target) (rt omprt.Runtime, others []string, err error) {
	var errs []error
	var found []omprt.Runtime
	var failed error
	var unread []string // loaded but not readable
	for _, r := range all {
		rt, err := r.open(t)
		if err == nil {
			found = append(found, rt)
			continue
		}
		if !errors.Is(err, omprt.ErrNoRuntime) {
			// A runtime found beats one only not ruled out: a libgomp
			// program whose libgomp file is missing is not told that
			// LLVM's symbols are not found.
			if failed == nil || omprt.IsUnidentified(failed) && !omprt.IsUnidentified(err) {
				failed = err
			}
			if !omprt.IsUnidentified(err) {
				unread = append(unread, r.name+" (not read: "+err.Error()+")")
			}
		}
		errs = append(errs, err)
	}
	if len(found) > 0 {
		rt, others := choose(found)
		return rt, append(others, unread...), nil
	}
	if failed != nil {
		// A runtime is there but cannot be read: say why.
		return nil, nil, failed
	}
	if len(errs) == 1 {
		return nil, nil, errs[0]
	}
	return nil, nil, fmt.Errorf("%w (%w)", omprt.ErrNoRuntime, errjoin.Join(errs...))
}

// choose picks, among the runtimes loaded in one target, the one whose
// OpenMP threads the program uses (the most threads; the first listed on a
// tie), and names the others.
func choose(found []omprt.Runtime) (omprt.Runtime, []string) {
	if len(found) == 1 {
		return found[0], nil
	}
	best, most := 0, -1
	for i, rt := range found {
		if refs, err := rt.Threads(); err == nil && len(refs) > most {
			best, most = i, len(refs)
		}
	}
	var others []string
	for i, rt := range found {
		if i != best {
			others = append(others, rt.Info().Name)
		}
	}
	return found[best], others
}
