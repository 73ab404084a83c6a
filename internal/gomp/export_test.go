package gomp

// What the external tests (package gomp_test, which may import
// target/delve) need of the package's insides.

// ompt_state_t values the tests expect.
const (
	StateIdle            = stateIdle
	StateWorkSerial      = stateWorkSerial
	StateWorkParallel    = stateWorkParallel
	StateBarrierExplicit = stateBarrierExplicit
	StateLock            = stateLock
	StateMutex           = stateMutex
	StateCritical        = stateCritical
	StateBarrierImplicit = stateBarrierImplicitPar
	StateTaskwait        = stateTaskwait
	StateTaskgroup       = stateTaskgroup
	FlagImplicit         = flagImplicit
	FlagUndeferred       = flagUndeferred
	TaskKindField        = taskKind
	ThreadTeamField      = thrTeam
)

// KnownLayouts returns the table of known layouts; SetKnownLayouts
// replaces it (tests restore it).
func KnownLayouts() []*Layout     { return knownLayouts }
func SetKnownLayouts(l []*Layout) { knownLayouts = l }
