package omprt

// ScopeKind is the kind of handle an ICV is read from (ompd_scope_t); the
// values are OMPD's and package ompd's ScopeKind.
type ScopeKind int

// ICV scopes (ompd_scope_t). They are untyped so that package ompd's
// exported ScopeKind constants are defined from them: this is the one list.
const (
	ScopeGlobal       = 1
	ScopeAddressSpace = 2
	ScopeThread       = 3
	ScopeParallel     = 4
	ScopeImplicitTask = 5
	ScopeTask         = 6
)

// ICV identifies an internal control variable; the values are package
// ompd's ICV ids. Ids 1 to 30 are LLVM's libompd 19 enumeration, in its
// order; ICVs libompd does not know follow (31 and 32: OpenMP 5.1's
// teams ICVs).
type ICV int

// The ICVs, in libompd's enumeration order. They are untyped so that
// package ompd's exported ICV constants are defined from them: this is the
// one list of ids.
const (
	ICVDynVar = iota + 1
	ICVRunSchedVar
	ICVStacksizeVar
	ICVCancelVar
	ICVMaxTaskPriorityVar
	ICVDebugVar
	ICVNthreadsVar
	ICVDisplayAffinityVar
	ICVAffinityFormatVar
	ICVDefaultDeviceVar
	ICVToolVar
	ICVToolLibrariesVar
	ICVToolVerboseInitVar
	ICVLevelsVar
	ICVActiveLevelsVar
	ICVThreadLimitVar
	ICVMaxActiveLevelsVar
	ICVBindVar
	ICVNumProcsVar
	ICVOMPDNumProcsVar
	ICVThreadNumVar
	ICVOMPDThreadNumVar
	ICVFinalTaskVar
	ICVOMPDFinalVar
	ICVOMPDFinalTaskVar
	ICVImplicitTaskVar
	ICVOMPDImplicitVar
	ICVOMPDImplicitTaskVar
	ICVTeamSizeVar
	ICVOMPDTeamSizeVar
	// ICVNteamsVar (nteams-var, omp_get_max_teams) and
	// ICVTeamsThreadLimitVar (teams-thread-limit-var,
	// omp_get_teams_thread_limit) are OpenMP 5.1's, of device scope (the
	// address space's here); libompd 19 has no ids for them.
	ICVNteamsVar
	ICVTeamsThreadLimitVar
	// ICVEnd is one past the last id.
	ICVEnd
)

// ICVInfo is an ICV's name and scope.
type ICVInfo struct {
	Name  string
	Scope ScopeKind
}

// ICVTable gives every ICV's name and scope, indexed by id (entry 0 is
// empty). A new ICV is a new constant before ICVEnd and an entry here.
var ICVTable = [ICVEnd]ICVInfo{
	ICVDynVar:              {"dyn-var", ScopeThread},
	ICVRunSchedVar:         {"run-sched-var", ScopeTask},
	ICVStacksizeVar:        {"stacksize-var", ScopeAddressSpace},
	ICVCancelVar:           {"cancel-var", ScopeAddressSpace},
	ICVMaxTaskPriorityVar:  {"max-task-priority-var", ScopeAddressSpace},
	ICVDebugVar:            {"debug-var", ScopeAddressSpace},
	ICVNthreadsVar:         {"nthreads-var", ScopeThread},
	ICVDisplayAffinityVar:  {"display-affinity-var", ScopeAddressSpace},
	ICVAffinityFormatVar:   {"affinity-format-var", ScopeAddressSpace},
	ICVDefaultDeviceVar:    {"default-device-var", ScopeThread},
	ICVToolVar:             {"tool-var", ScopeAddressSpace},
	ICVToolLibrariesVar:    {"tool-libraries-var", ScopeAddressSpace},
	ICVToolVerboseInitVar:  {"tool-verbose-init-var", ScopeAddressSpace},
	ICVLevelsVar:           {"levels-var", ScopeParallel},
	ICVActiveLevelsVar:     {"active-levels-var", ScopeParallel},
	ICVThreadLimitVar:      {"thread-limit-var", ScopeTask},
	ICVMaxActiveLevelsVar:  {"max-active-levels-var", ScopeTask},
	ICVBindVar:             {"bind-var", ScopeTask},
	ICVNumProcsVar:         {"num-procs-var", ScopeAddressSpace},
	ICVOMPDNumProcsVar:     {"ompd-num-procs-var", ScopeAddressSpace},
	ICVThreadNumVar:        {"thread-num-var", ScopeThread},
	ICVOMPDThreadNumVar:    {"ompd-thread-num-var", ScopeThread},
	ICVFinalTaskVar:        {"final-task-var", ScopeTask},
	ICVOMPDFinalVar:        {"ompd-final-var", ScopeTask},
	ICVOMPDFinalTaskVar:    {"ompd-final-task-var", ScopeTask},
	ICVImplicitTaskVar:     {"implicit-task-var", ScopeTask},
	ICVOMPDImplicitVar:     {"ompd-implicit-var", ScopeTask},
	ICVOMPDImplicitTaskVar: {"ompd-implicit-task-var", ScopeTask},
	ICVTeamSizeVar:         {"team-size-var", ScopeParallel},
	ICVOMPDTeamSizeVar:     {"ompd-team-size-var", ScopeParallel},
	ICVNteamsVar:           {"nteams-var", ScopeAddressSpace},
	ICVTeamsThreadLimitVar: {"teams-thread-limit-var", ScopeAddressSpace},
}

// ICVBatch is implemented by runtimes that read several ICVs of one scope
// in one call. Package ompd's Snapshot reads every ICV of every thread and
// of its task: one call per scope instead of one per ICV saves finding
// the scope's object again for each.
type ICVBatch interface {
	// ICVsAt reads the ICVs ids at scope s: vals[i] and errs[i] are
	// what ICV(s, ids[i]) returns. vals and errs are as long as ids.
	ICVsAt(s ScopeRef, ids []ICV, vals []Value, errs []error)
}

// ICVKeyed is implemented by runtimes that can tell that the ICVs of a
// scope are those of the scope a caller read last. Package ompd's
// Snapshot reads the task ICVs of every thread, and the implicit tasks of
// a team mostly hold the same: comparing what they are made of costs
// less than decoding and formatting them again.
type ICVKeyed interface {
	// ICVsAtKeyed is ICVsAt for a caller that passes the same ids,
	// vals, errs and key from call to call. If what the answers at
	// scope s are made of is *key, it reports true and leaves vals and
	// errs as the caller's last call left them; else it fills them as
	// ICVsAt does, sets *key (to the zero key if the answers have no
	// key) and reports false.
	ICVsAtKeyed(s ScopeRef, ids []ICV, vals []Value, errs []error, key *ICVKey) bool
}

// ICVKey is what the answers of an ICVKeyed runtime at one scope are
// made of, in the runtime's own terms; the zero key matches nothing.
type ICVKey struct {
	Stop  uint64   // the stop the answers were read at (never 0)
	Raw   [96]byte // the bytes of the runtime's structure that hold them
	Level int32
	Flags uint32
}

// Value is an ICV's value as a runtime package decoded it.
type Value struct {
	// Int is the integer value; for a list, its first element.
	Int int64
	// Text is the value as text when HasText is set: a list comma
	// separated, a schedule as LLVM's libompd writes it. Otherwise the
	// text is Int in decimal.
	Text    string
	HasText bool
	// IsString says the ICV is text only (Int means nothing).
	IsString bool
	// List is the whole list of a list-valued ICV (nthreads-var,
	// bind-var), nil otherwise.
	List []int64
	// FromEnv says the value was derived from the program's start-up
	// environment (the runtime's own state could not be read, and the
	// program cannot have changed it since).
	FromEnv bool
}
