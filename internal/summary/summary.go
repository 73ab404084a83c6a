// Package summary groups the threads of OpenMP programs by what they are
// doing, as tools for large parallel jobs merge stack traces: threads with
// the same state, the same nest of parallel regions (and, when known, the
// same call stack) make one group, which counts them and names the ranks
// (processes, one per MPI rank) they come from.
//
// A Summary of one process is built with Of; summaries of many processes
// are combined with Merge, which is associative and commutative: summaries
// merged on each node of a cluster can be merged again at the front end,
// in any order and any tree shape, with the same result as merging
// everything at once. A Summary encodes to JSON and back unchanged, so
// per-node results can travel between processes.
package summary

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd"
)

// Summary is the grouped threads of one or more processes.
type Summary struct {
	// Threads is how many threads were grouped.
	Threads int `json:"threads"`
	// Ranks are the processes summarized.
	Ranks Ranges `json:"ranks"`
	// Groups, the largest first (then by key), so that equal summaries
	// have equal Groups however they were merged.
	Groups []Group `json:"groups"`
}

// Group is threads doing the same thing.
type Group struct {
	Key
	// Threads is how many threads are in the group.
	Threads int `json:"threads"`
	// Ranks are the processes the threads come from.
	Ranks Ranges `json:"ranks"`
	// GTIDs are the threads' global thread ids while all of them come
	// from one process; empty for a group spanning several processes.
	GTIDs Ranges `json:"gtids,omitempty"`
	// Example is one thread of the group: the lowest rank, and in it the
	// lowest global thread id.
	Example ThreadRef `json:"example"`
}

// ThreadRef names one thread of one process.
type ThreadRef struct {
	Rank int    `json:"rank"`
	GTID int    `json:"gtid"`
	LWP  uint64 `json:"lwp,omitempty"`
}

func (r ThreadRef) less(o ThreadRef) bool {
	if r.Rank != o.Rank {
		return r.Rank < o.Rank
	}
	return r.GTID < o.GTID
}

// Key is what the threads of a group share.
type Key struct {
	// State is the thread state ("wait_barrier_implicit"), "starting" for
	// a thread the runtime has not finished starting, or "" when the
	// runtime does not track states.
	State string `json:"state,omitempty"`
	// StateUnknown says why State is "" when the runtime records no
	// states and the thread's stack did not tell (see
	// ompd.ThreadSnapshot.StateUnknown).
	StateUnknown string `json:"state_unknown,omitempty"`
	// League places the threads in a team of a host teams league; nil
	// outside any. Threads of different teams are different groups.
	League *League `json:"league,omitempty"`
	// Regions is the nest of parallel regions, innermost first.
	Regions []Region `json:"regions"`
	// Stack is the innermost function names of the thread's call stack
	// (innermost first), when a backtrace was taken.
	Stack []string `json:"stack,omitempty"`
}

// League is a team of a host teams league, as omp_get_team_num and
// omp_get_num_teams give them.
type League struct {
	TeamNum  int `json:"team_num"`
	NumTeams int `json:"num_teams"`
}

// Region is one parallel region of a group's nest. Threads of different
// teams of the same code (the inner teams of a nested region) share it.
type Region struct {
	Level      int    `json:"level"`
	NumThreads int    `json:"num_threads"`
	Function   string `json:"function,omitempty"`
	// Source is where the region's outlined function is, "file:line",
	// when the debug information tells. It is not part of the key: a
	// merge keeps the smallest one known.
	Source string `json:"source,omitempty"`
}

// id is the key in a form fit for a map and for ordering.
func (k Key) id() string {
	b := make([]byte, 0, 128)
	b = append(b, k.State...)
	if k.StateUnknown != "" {
		b = append(b, 3)
		b = append(b, k.StateUnknown...)
	}
	if k.League != nil {
		b = append(b, 2)
		b = strconv.AppendInt(b, int64(k.League.TeamNum), 10)
		b = append(b, 1)
		b = strconv.AppendInt(b, int64(k.League.NumTeams), 10)
	}
	for _, r := range k.Regions {
		b = append(b, 0)
		b = strconv.AppendInt(b, int64(r.Level), 10)
		b = append(b, 1)
		b = strconv.AppendInt(b, int64(r.NumThreads), 10)
		b = append(b, 1)
		b = append(b, r.Function...)
	}
	b = append(b, 0, 0)
	for i, f := range k.Stack {
		if i > 0 {
			b = append(b, 1)
		}
		b = append(b, f...)
	}
	return string(b)
}

// Options say what Of adds to the snapshot's facts.
type Options struct {
	// Stack, if set, gives the call-stack part of a thread's key (see
	// Key.Stack).
	Stack func(ompd.ThreadSnapshot) []string
	// Source, if set, gives the "file:line" of a region's outlined
	// function from its address ("" when unknown).
	Source func(pc uint64) string
}

// KeyOf returns the key of a thread of a snapshot.
func KeyOf(t ompd.ThreadSnapshot, opts Options) Key {
	k := Key{StateUnknown: t.StateUnknown}
	if !t.NoState {
		k.State = t.State.String()
	}
	if t.Starting {
		k.State = "starting"
	}
	if t.NumTeams > 0 {
		k.League = &League{TeamNum: t.TeamNum, NumTeams: t.NumTeams}
	}
	if opts.Stack != nil {
		k.Stack = opts.Stack(t)
	}
	for _, p := range t.Parallel {
		r := Region{Level: p.Level, NumThreads: p.NumThreads, Function: p.Function}
		if opts.Source != nil && p.FunctionPC != 0 {
			r.Source = opts.Source(p.FunctionPC)
		}
		k.Regions = append(k.Regions, r)
	}
	return k
}

// Of groups the threads of one process's snapshot, which is rank rank.
func Of(rank int, s *ompd.Snapshot, opts Options) *Summary {
	groups := map[string]*Group{}
	for _, t := range s.Threads {
		add(groups, KeyOf(t, opts), ThreadRef{Rank: rank, GTID: t.GTID, LWP: t.LWP})
	}
	return build(len(s.Threads), Ranges{{rank, rank}}, groups)
}

// Merge combines summaries (of different processes, normally) into a new
// one; the arguments are not changed. Merge is associative and
// commutative; nil summaries are skipped.
func Merge(ss ...*Summary) *Summary {
	groups := map[string]*Group{}
	total := 0
	var ranks Ranges
	for _, s := range ss {
		if s == nil {
			continue
		}
		total += s.Threads
		ranks = ranks.Union(s.Ranks)
		for _, g := range s.Groups {
			id := g.Key.id()
			m := groups[id]
			if m == nil {
				c := g
				c.Regions = append([]Region(nil), g.Regions...)
				c.Ranks = append(Ranges(nil), g.Ranks...)
				c.GTIDs = append(Ranges(nil), g.GTIDs...)
				groups[id] = &c
				continue
			}
			single := m.Ranks.single() && g.Ranks.single() && m.Ranks[0] == g.Ranks[0]
			m.Threads += g.Threads
			m.Ranks = m.Ranks.Union(g.Ranks)
			if single {
				m.GTIDs = m.GTIDs.Union(g.GTIDs)
			} else {
				m.GTIDs = nil
			}
			if g.Example.less(m.Example) {
				m.Example = g.Example
			}
			for i, r := range g.Regions {
				if src := m.Regions[i].Source; r.Source != "" && (src == "" || r.Source < src) {
					m.Regions[i].Source = r.Source
				}
			}
		}
	}
	return build(total, ranks, groups)
}

func build(total int, ranks Ranges, groups map[string]*Group) *Summary {
	s := &Summary{Threads: total, Ranks: ranks, Groups: make([]Group, 0, len(groups))}
	ids := make(map[*Group]string, len(groups))
	for id, g := range groups {
		ids[g] = id
	}
	ordered := make([]*Group, 0, len(groups))
	for _, g := range groups {
		ordered = append(ordered, g)
	}
	sort.Slice(ordered, func(i, j int) bool {
		if ordered[i].Threads != ordered[j].Threads {
			return ordered[i].Threads > ordered[j].Threads
		}
		return ids[ordered[i]] < ids[ordered[j]]
	})
	for _, g := range ordered {
		s.Groups = append(s.Groups, *g)
	}
	return s
}

// Describe writes what a group's threads do in one line, as
// "wait_barrier_implicit in main.omp_outlined, level 1, team of 256",
// outer regions after the innermost one ("; in f, level 1, team of 3"),
// then the host team ("; host team 1 of 2").
func (k Key) Describe() string {
	var b strings.Builder
	b.WriteString(k.StateText())
	active := 0
	for _, r := range k.Regions {
		if r.Level == 0 && r.NumThreads <= 1 && r.Function == "" {
			continue // the initial (implicit) region every thread has
		}
		if active > 0 {
			b.WriteString(";")
		}
		active++
		fn := r.Function
		if fn == "" {
			fn = "?"
		}
		if r.Source != "" {
			fn += " (" + r.Source + ")"
		}
		fmt.Fprintf(&b, " in %s, level %d, team of %d", fn, r.Level, r.NumThreads)
	}
	if active == 0 {
		b.WriteString(", serial")
	}
	if k.League != nil {
		fmt.Fprintf(&b, "; host team %d of %d", k.League.TeamNum, k.League.NumTeams)
	}
	if len(k.Stack) > 0 {
		b.WriteString("; stack " + strings.Join(k.Stack, " < "))
	}
	return b.String()
}

// StateText is the state as the one-line descriptions show it: the state's
// name, or "(state unknown)" with why when that is known.
func (k Key) StateText() string {
	switch {
	case k.State != "":
		return k.State
	case k.StateUnknown != "":
		return "(state unknown: " + k.StateUnknown + ")"
	}
	return "(state unknown)"
}

// Limits of what a Summary read from elsewhere (another node's collector)
// may hold: a rank or thread id is an int32, as MPI's and the runtimes'
// are; a count of threads fits in far fewer bits than int, so that sums
// of many summaries cannot overflow.
const (
	MaxID      = 1<<31 - 1
	MaxThreads = 1 << 40
	// MaxRankThreads bounds the threads of one process (Linux's
	// threads-max is far below).
	MaxRankThreads = 1 << 22
)

// Check reports what makes s impossible, as a summary read from another
// process may be (a corrupt or forged line): counts below zero or beyond
// MaxThreads or MaxRankThreads a rank, groups whose threads do not add up
// to Threads, a group
// without threads or ranks, or with ranks the summary does not have. Ids
// beyond MaxID are refused when read (Ranges.UnmarshalText).
func (s *Summary) Check() error {
	if s.Threads < 0 || s.Threads > MaxThreads {
		return fmt.Errorf("summary: %d threads", s.Threads)
	}
	if s.Threads > s.Ranks.Len()*MaxRankThreads {
		return fmt.Errorf("summary: %d threads in %d ranks", s.Threads, s.Ranks.Len())
	}
	sum := 0
	for i, g := range s.Groups {
		if g.Threads < 1 || g.Threads > MaxThreads {
			return fmt.Errorf("summary: group %d has %d threads", i, g.Threads)
		}
		if sum += g.Threads; sum > s.Threads {
			return fmt.Errorf("summary: its groups hold more than its %d threads", s.Threads)
		}
		if len(g.Ranks) == 0 || len(g.Ranks.Minus(s.Ranks)) > 0 {
			return fmt.Errorf("summary: group %d has ranks %q, the summary %q", i, g.Ranks, s.Ranks)
		}
	}
	if sum != s.Threads {
		return fmt.Errorf("summary: its groups hold %d of its %d threads", sum, s.Threads)
	}
	return nil
}

// Range is the integers First to Last, both included.
type Range struct {
	First, Last int
}

// Ranges is a set of integers (ranks, thread ids) as sorted, disjoint,
// non-adjacent ranges. Its String and JSON forms are "0-511,513".
type Ranges []Range

// MarshalText writes r as String does.
func (r Ranges) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads the String form ("0-511,513"; "" is the empty set).
func (r *Ranges) UnmarshalText(b []byte) error {
	var out Ranges
	for _, part := range strings.Split(string(b), ",") {
		if part == "" && len(b) == 0 {
			break
		}
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 || first > MaxID {
			return fmt.Errorf("summary: bad range %q in %.100q", part, b)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first || last > MaxID {
				return fmt.Errorf("summary: bad range %q in %.100q", part, b)
			}
		}
		out = append(out, Range{first, last})
	}
	*r = out.Union(nil)
	return nil
}

// Add returns r with n added.
func (r Ranges) Add(n int) Ranges { return r.Union(Ranges{{n, n}}) }

// Union returns the integers in r or o, as a new Ranges.
func (r Ranges) Union(o Ranges) Ranges {
	all := make(Ranges, 0, len(r)+len(o))
	all = append(append(all, r...), o...)
	sort.Slice(all, func(i, j int) bool { return all[i].First < all[j].First })
	out := make(Ranges, 0, len(all))
	for _, x := range all {
		if x.Last < x.First {
			continue
		}
		if n := len(out); n > 0 && x.First <= out[n-1].Last+1 {
			if x.Last > out[n-1].Last {
				out[n-1].Last = x.Last
			}
			continue
		}
		out = append(out, x)
	}
	return out
}

// Minus returns the integers of r not in o, as a new Ranges.
func (r Ranges) Minus(o Ranges) Ranges {
	o = o.Union(nil)
	var out Ranges
	for _, x := range r.Union(nil) {
		for _, y := range o {
			if y.Last < x.First || y.First > x.Last {
				continue
			}
			if y.First > x.First {
				out = append(out, Range{x.First, y.First - 1})
			}
			if y.Last >= x.Last {
				x.First = x.Last + 1
				break
			}
			x.First = y.Last + 1
		}
		if x.First <= x.Last {
			out = append(out, x)
		}
	}
	return out
}

// Intersect returns the integers in both r and o, as a new Ranges.
func (r Ranges) Intersect(o Ranges) Ranges { return r.Minus(r.Minus(o)) }

// Len is how many integers r holds.
func (r Ranges) Len() int {
	n := 0
	for _, x := range r {
		n += x.Last - x.First + 1
	}
	return n
}

func (r Ranges) single() bool { return len(r) == 1 && r[0].First == r[0].Last }

func (r Ranges) String() string {
	parts := make([]string, len(r))
	for i, x := range r {
		if x.First == x.Last {
			parts[i] = strconv.Itoa(x.First)
		} else {
			parts[i] = strconv.Itoa(x.First) + "-" + strconv.Itoa(x.Last)
		}
	}
	return strings.Join(parts, ",")
}
