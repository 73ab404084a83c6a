package gomp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

//go:generate go run ./gen -o known_layouts.go

// fieldID names one member of a libgomp structure this package reads.
type fieldID int

// The members read, as fieldSpecs describes them.
const (
	thrFn fieldID = iota
	thrData
	thrTeam
	thrTeamID
	thrLevel
	thrActiveLevel
	thrTask
	thrRelease
	thrPool
	thrNumTeams
	thrTeamNum
	teamNthreads
	teamPrevTeam
	teamPrevTeamID
	teamPrevLevel
	teamPrevActiveLevel
	teamOrderedRelease
	teamMasterRelease
	teamBarrierGeneration
	teamImplicitTask
	taskParent
	taskTaskgroup
	taskTaskwait
	taskNthreads
	taskRunSched
	taskRunSchedChunk
	taskDefaultDevice
	taskThreadLimit
	taskDyn
	taskMaxActiveLevels
	taskBind
	taskFn
	taskFnData
	taskKind
	taskFinal
	poolThreads
	poolThreadsUsed
	poolLastTeam
	poolDock
	icvNthreads
	icvRunSched
	icvRunSchedChunk
	icvDefaultDevice
	icvThreadLimit
	icvDyn
	icvMaxActiveLevels
	icvBind
	numFields
)

// fieldSpec is a member: its struct, its dotted path in it, and the size
// libgomp gives it on LP64 (checked by the generator against DWARF).
type fieldSpec struct {
	typ, path string
	size      uint64
}

// optionalFields are the members older releases may lack (the host
// teams' numbers came with OpenMP 5.0; GCC 10 and older keep
// max-active-levels-var in a global, not in each task's ICVs): a layout
// without one has a zero Field for it (Size 0), whose reads give 0, so
// its readers check Size first.
var optionalFields = []fieldID{thrNumTeams, thrTeamNum, taskMaxActiveLevels, icvMaxActiveLevels}

func (id fieldID) optional() bool {
	for _, o := range optionalFields {
		if o == id {
			return true
		}
	}
	return false
}

var fieldSpecs = [numFields]fieldSpec{
	thrFn:                 {"gomp_thread", "fn", 8},
	thrData:               {"gomp_thread", "data", 8},
	thrTeam:               {"gomp_thread", "ts.team", 8},
	thrTeamID:             {"gomp_thread", "ts.team_id", 4},
	thrLevel:              {"gomp_thread", "ts.level", 4},
	thrActiveLevel:        {"gomp_thread", "ts.active_level", 4},
	thrTask:               {"gomp_thread", "task", 8},
	thrRelease:            {"gomp_thread", "release", 4},
	thrPool:               {"gomp_thread", "thread_pool", 8},
	thrNumTeams:           {"gomp_thread", "num_teams", 4},
	thrTeamNum:            {"gomp_thread", "team_num", 4},
	teamNthreads:          {"gomp_team", "nthreads", 4},
	teamPrevTeam:          {"gomp_team", "prev_ts.team", 8},
	teamPrevTeamID:        {"gomp_team", "prev_ts.team_id", 4},
	teamPrevLevel:         {"gomp_team", "prev_ts.level", 4},
	teamPrevActiveLevel:   {"gomp_team", "prev_ts.active_level", 4},
	teamOrderedRelease:    {"gomp_team", "ordered_release", 8},
	teamMasterRelease:     {"gomp_team", "master_release", 4},
	teamBarrierGeneration: {"gomp_team", "barrier.generation", 4},
	teamImplicitTask:      {"gomp_team", "implicit_task", 0},
	taskParent:            {"gomp_task", "parent", 8},
	taskTaskgroup:         {"gomp_task", "taskgroup", 8},
	taskTaskwait:          {"gomp_task", "taskwait", 8},
	taskNthreads:          {"gomp_task", "icv.nthreads_var", 8},
	taskRunSched:          {"gomp_task", "icv.run_sched_var", 4},
	taskRunSchedChunk:     {"gomp_task", "icv.run_sched_chunk_size", 4},
	taskDefaultDevice:     {"gomp_task", "icv.default_device_var", 4},
	taskThreadLimit:       {"gomp_task", "icv.thread_limit_var", 4},
	taskDyn:               {"gomp_task", "icv.dyn_var", 1},
	taskMaxActiveLevels:   {"gomp_task", "icv.max_active_levels_var", 1},
	taskBind:              {"gomp_task", "icv.bind_var", 1},
	taskFn:                {"gomp_task", "fn", 8},
	taskFnData:            {"gomp_task", "fn_data", 8},
	taskKind:              {"gomp_task", "kind", 4},
	taskFinal:             {"gomp_task", "final_task", 1},
	poolThreads:           {"gomp_thread_pool", "threads", 8},
	poolThreadsUsed:       {"gomp_thread_pool", "threads_used", 4},
	poolLastTeam:          {"gomp_thread_pool", "last_team", 8},
	poolDock:              {"gomp_thread_pool", "threads_dock", 0},
	icvNthreads:           {"gomp_task_icv", "nthreads_var", 8},
	icvRunSched:           {"gomp_task_icv", "run_sched_var", 4},
	icvRunSchedChunk:      {"gomp_task_icv", "run_sched_chunk_size", 4},
	icvDefaultDevice:      {"gomp_task_icv", "default_device_var", 4},
	icvThreadLimit:        {"gomp_task_icv", "thread_limit_var", 4},
	icvDyn:                {"gomp_task_icv", "dyn_var", 1},
	icvMaxActiveLevels:    {"gomp_task_icv", "max_active_levels_var", 1},
	icvBind:               {"gomp_task_icv", "bind_var", 1},
}

// typeID names a libgomp structure whose size this package needs.
type typeID int

// The structures.
const (
	typeThread typeID = iota
	typeTeam
	typeTask
	typePool
	typeICV
	numTypes
)

var typeNames = [numTypes]string{
	typeThread: "gomp_thread",
	typeTeam:   "gomp_team",
	typeTask:   "gomp_task",
	typePool:   "gomp_thread_pool",
	typeICV:    "gomp_task_icv",
}

// Layout is where libgomp keeps what this package reads: member offsets
// and sizes and structure sizes, for one build of the library.
type Layout struct {
	// GCC is the GCC version the layout was taken from ("12.2.0"), ""
	// when read from the target's own DWARF.
	GCC string
	// Node is the newest GOMP_ symbol version of that library.
	Node string
	// BuildID is that library's build-id, hex.
	BuildID string
	// Fields holds each member's offset in its structure and its size.
	Fields [numFields]omprt.Field
	// Sizes holds each structure's size.
	Sizes [numTypes]uint64
}

func (l *Layout) f(id fieldID) omprt.Field { return l.Fields[id] }
func (l *Layout) size(id typeID) uint64    { return l.Sizes[id] }
func (l *Layout) String() string           { return "libgomp " + l.GCC + " (" + l.Node + ")" }

// dwarfLayout reads the layout from the target's debug information (the
// library's own DWARF, or its separate debug file).
func dwarfLayout(t target.Target) (*Layout, error) {
	l := &Layout{}
	var miss missing
	for i, name := range typeNames {
		s, err := t.TypeSize("struct " + name)
		if err != nil {
			miss.add(err)
			continue
		}
		l.Sizes[i] = s
	}
	for i, spec := range fieldSpecs {
		off, err := t.FieldOffset("struct "+spec.typ, spec.path)
		if err != nil {
			if fieldID(i).optional() && errors.Is(err, target.ErrNotFound) {
				continue
			}
			miss.add(err)
			continue
		}
		l.Fields[i] = omprt.Field{Off: off, Size: spec.size}
	}
	if err := miss.err(); err != nil {
		return nil, err
	}
	if err := l.check(); err != nil {
		return nil, err
	}
	return l, nil
}

// missing gathers the failed lookups of dwarfLayout into one error: each
// lookup's error repeats what was searched (every object and debug file),
// so the error names the missing structures and members once each, and
// what was searched once.
type missing struct {
	names  []string // "struct gomp_thread", "gomp_task.kind"
	seen   map[string]bool
	cause  error   // the first lookup's cause: what was searched
	others []error // failures that are no lookup's, one per message
}

func (m *missing) add(err error) {
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	var le *target.LookupError
	if !errors.As(err, &le) {
		if msg := err.Error(); !m.seen[msg] {
			m.seen[msg] = true
			m.others = append(m.others, err)
		}
		return
	}
	name := le.Name
	if le.Kind != "type" {
		name = strings.TrimPrefix(name, "struct ")
	}
	if !m.seen[name] {
		m.seen[name] = true
		m.names = append(m.names, name)
	}
	if m.cause == nil {
		m.cause = le.Err
	}
}

func (m *missing) err() error {
	if len(m.names) == 0 && len(m.others) == 0 {
		return nil
	}
	if len(m.names) == 0 {
		return errors.Join(m.others...)
	}
	cause := m.cause
	if len(m.others) > 0 {
		cause = errors.Join(append([]error{cause}, m.others...)...)
	}
	return fmt.Errorf("libgomp's structures are not in the debug information (missing %s): %w", strings.Join(m.names, ", "), cause)
}

// check verifies that every member lies inside its structure.
func (l *Layout) check() error {
	var bad []string
	for i, spec := range fieldSpecs {
		st := typeThread
		for j, n := range typeNames {
			if n == spec.typ {
				st = typeID(j)
			}
		}
		if l.Fields[i].End() > l.Sizes[st] {
			bad = append(bad, fmt.Sprintf("%s.%s ends at %d, past the struct's %d bytes", spec.typ, spec.path, l.Fields[i].End(), l.Sizes[st]))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("gomp: layout does not fit: %s", strings.Join(bad, "; "))
	}
	return nil
}

// knownLayout returns the generated layout for a library: by build-id
// first, then by its newest GOMP_ symbol version.
func knownLayout(lib *library) (*Layout, bool) {
	for _, l := range knownLayouts {
		if lib.buildID != "" && l.BuildID == lib.buildID {
			return l, true
		}
	}
	for _, l := range knownLayouts {
		if lib.newestNode != "" && l.Node == lib.newestNode {
			return l, true
		}
	}
	return nil, false
}

// sameLayout lists the GCC releases of the known layouts with l's
// symbol version and l's layout (GCC 9 and 10 share both).
func sameLayout(l *Layout) []string {
	var out []string
	for _, k := range knownLayouts {
		if k.Node == l.Node && k.Fields == l.Fields && k.Sizes == l.Sizes {
			out = append(out, k.GCC)
		}
	}
	return out
}

// knownNames lists the known layouts for error messages.
func knownNames() string {
	var s []string
	for _, l := range knownLayouts {
		s = append(s, "GCC "+l.GCC+" ("+l.Node+")")
	}
	return strings.Join(s, ", ")
}

// structLayout is one structure as a known libgomp build lays it out: its
// size and the offset of each of its members in fieldSpecs, in that order.
// Builds that lay a structure out alike share one (known_layouts.go).
type structLayout struct {
	typ     typeID
	size    uint64
	offsets []uint64
}

// absent is the offset of an optional member a release lacks in
// known_layouts.go.
const absent = ^uint64(0)

// known completes a known library's Layout from its structures' layouts.
// The generator writes both from fieldSpecs, so a mismatch is a stale
// known_layouts.go: it panics when the package is initialised.
func known(l Layout, structs ...*structLayout) *Layout {
	for _, s := range structs {
		l.Sizes[s.typ] = s.size
		offs := s.offsets
		for i, spec := range fieldSpecs {
			if spec.typ != typeNames[s.typ] {
				continue
			}
			if len(offs) == 0 {
				panic("gomp: known_layouts.go is stale: go generate ./internal/gomp")
			}
			if offs[0] != absent {
				l.Fields[i] = omprt.Field{Off: offs[0], Size: spec.size}
			}
			offs = offs[1:]
		}
		if len(offs) != 0 {
			panic("gomp: known_layouts.go is stale: go generate ./internal/gomp")
		}
	}
	return &l
}
