package summary

import (
	"fmt"
	"path/filepath"

	"github.com/ompd-go/ompd"
)

// Record is the compact state of one process (one MPI rank) as a
// collector on its node writes it, one JSON line per rank: enough to group
// its threads with Summary, and to show any one of them.
type Record struct {
	Rank int    `json:"rank"`
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Runtime names the OpenMP runtime read and its version.
	Runtime string         `json:"runtime,omitempty"`
	Threads []RecordThread `json:"threads,omitempty"`
	// Error says why the process could not be read (Threads is then
	// empty); Errors are the answers that failed in a snapshot taken.
	Error  string   `json:"error,omitempty"`
	Errors []string `json:"snapshot_errors,omitempty"`
}

// RecordThread is one thread of a Record.
type RecordThread struct {
	GTID int    `json:"gtid"`
	LWP  uint64 `json:"lwp,omitempty"`
	Key
	// Task is the head of the thread's task chain ("implicit
	// main._omp_fn.0"), "" if the runtime did not tell.
	Task string `json:"task,omitempty"`
	// Frames are the thread's backtrace, innermost first, one
	// "function (file:line)" or "function" each.
	Frames []string `json:"frames,omitempty"`
}

// NewRecord makes the record of a process's snapshot: rank rank, running
// as process pid on host. opts are as for Of.
func NewRecord(rank int, host string, pid int, s *ompd.Snapshot, opts Options) Record {
	r := Record{Rank: rank, Host: host, PID: pid, Runtime: s.Runtime, Errors: s.Errors}
	if s.RuntimeVersion != "" {
		r.Runtime += " " + s.RuntimeVersion
	}
	r.Threads = make([]RecordThread, len(s.Threads))
	for i, t := range s.Threads {
		rt := RecordThread{GTID: t.GTID, LWP: t.LWP, Key: KeyOf(t, opts)}
		if len(t.Tasks) > 0 {
			head := t.Tasks[0]
			rt.Task = head.Kind.String()
			if head.Function != "" {
				rt.Task += " " + head.Function
			}
		}
		for _, f := range t.Frames {
			name := f.Function
			if name == "" {
				name = "??"
			}
			if f.File != "" {
				name += fmt.Sprintf(" (%s:%d)", filepath.Base(f.File), f.Line)
			}
			rt.Frames = append(rt.Frames, name)
		}
		r.Threads[i] = rt
	}
	return r
}

// Summary groups the threads of the record as Of groups a snapshot's: the
// summary of a record merges with those of snapshots and of other records.
// A record with an Error has no threads; its rank is still counted.
func (r Record) Summary() *Summary {
	groups := make(map[string]*Group, 4)
	for _, t := range r.Threads {
		add(groups, t.Key, ThreadRef{Rank: r.Rank, GTID: t.GTID, LWP: t.LWP})
	}
	return build(len(r.Threads), Ranges{{r.Rank, r.Rank}}, groups)
}

// add counts a thread of one rank with key k in groups.
func add(groups map[string]*Group, k Key, ref ThreadRef) {
	id := k.id()
	g := groups[id]
	if g == nil {
		g = &Group{Key: k, Ranks: Ranges{{ref.Rank, ref.Rank}}, Example: ref}
		groups[id] = g
	}
	g.Threads++
	// Threads come in gtid order, mostly: extend the last range in place
	// (g.GTIDs is the group's own) rather than sorting each time.
	if n := len(g.GTIDs); n > 0 && ref.GTID == g.GTIDs[n-1].Last+1 {
		g.GTIDs[n-1].Last++
	} else {
		g.GTIDs = g.GTIDs.Add(ref.GTID)
	}
	if ref.less(g.Example) {
		g.Example = ref
	}
}
