package gomp

import "github.com/ompd-go/ompd/internal/stackstate"

// What the external tests (package gomp_test, which may import
// target/delve) need of the package's insides.

// ompt_state_t values the tests expect.
const (
	StateIdle            = stateIdle
	StateWorkSerial      = stackstate.WorkSerial
	StateWorkParallel    = stackstate.WorkParallel
	StateBarrierExplicit = stackstate.BarrierExplicit
	StateBarrier         = stackstate.Barrier
	StateOrdered         = stackstate.Ordered
	StateLock            = stackstate.Lock
	StateMutex           = stackstate.Mutex
	StateCritical        = stackstate.Critical
	StateBarrierImplicit = stackstate.BarrierImplicitPar
	StateTaskwait        = stackstate.Taskwait
	StateTaskgroup       = stackstate.Taskgroup
	FlagImplicit         = flagImplicit
	FlagUndeferred       = flagUndeferred
	TaskKindField        = taskKind
	ThreadNumTeamsField  = thrNumTeams
	TaskMaxActiveField   = taskMaxActiveLevels
	ThreadTeamField      = thrTeam
)

// KnownLayouts returns the table of known layouts; SetKnownLayouts
// replaces it (tests restore it).
func KnownLayouts() []*Layout     { return knownLayouts }
func SetKnownLayouts(l []*Layout) { knownLayouts = l }

// Confirmations returns how many threads of r's current stop confirm its
// layout and how many contradict it (r is a *Runtime from Open).
func Confirmations(r any) (confirmed, failed int, err error) {
	return r.(*Runtime).confirmations()
}

// LayoutOf returns the layout r (a *Runtime from Open) reads with.
func LayoutOf(r any) *Layout { return r.(*Runtime).lay }

// Members and structures the sanity tests patch.
const (
	ThreadTaskField      = thrTask
	ThreadPoolField      = thrPool
	TaskNthreadsField    = taskNthreads
	TaskThreadLimitField = taskThreadLimit
	TaskDynField         = taskDyn
	TaskBindField        = taskBind
	PoolThreadsField     = poolThreads
	PoolLastTeamField    = poolLastTeam
	TypeThread           = typeThread
	TypeTask             = typeTask
)
