package omprt

import (
	"errors"
	"fmt"
)

// The error sentinels of package ompd. They are defined here so that
// runtime packages return errors matching them; package ompd re-exports
// the very same values (ompd.ErrUnavailable == omprt.ErrUnavailable), so
// errors.Is works across the boundary. Their documentation is package
// ompd's.
var (
	ErrUnavailable        = errors.New("ompd: unavailable")
	ErrStaleHandle        = errors.New("ompd: stale handle")
	ErrBadInput           = errors.New("ompd: bad input")
	ErrUnsupported        = errors.New("ompd: unsupported")
	ErrNeedsStateTracking = errors.New("ompd: needs state tracking (run the program with OMP_DEBUG=enabled)")
	ErrIncompatible       = errors.New("ompd: incompatible")
	ErrIncomplete         = errors.New("ompd: incomplete answer")
	ErrNoRuntime          = &noRuntimeError{}
	ErrReadFailed         = errors.New("ompd: target read failed")
	ErrWriteFailed        = errors.New("ompd: target write failed")
	ErrCorrupt            = errors.New("ompd: runtime memory is inconsistent")
)

type noRuntimeError struct{}

func (*noRuntimeError) Error() string { return "ompd: no OpenMP runtime in target" }

// Is makes ErrNoRuntime match ErrIncompatible too.
func (*noRuntimeError) Is(target error) bool { return target == ErrIncompatible }

// Unidentified marks err, an Opener's error, as one about a runtime the
// opener did not find but could not rule out either (its library may be
// among the objects the target could not load): runtimes.Open reports it
// only when no other runtime package found its own runtime.
func Unidentified(err error) error { return &unidentifiedError{err} }

// IsUnidentified reports whether err is marked by Unidentified.
func IsUnidentified(err error) bool {
	var u *unidentifiedError
	return errors.As(err, &u)
}

type unidentifiedError struct{ err error }

func (e *unidentifiedError) Error() string { return e.err.Error() }
func (e *unidentifiedError) Unwrap() error { return e.err }

// Error adds context to a sentinel (and optionally a cause) while keeping
// both reachable through errors.Is. Its message is formatted only when
// Error is called, so building one on a path where the caller drops it
// (the end of a chain, an answer a snapshot does not need) costs an
// allocation, never a Sprintf.
type Error struct {
	Kind   error  // one of the sentinels above
	Cause  error  // underlying error, may be nil
	Format string // context, formatted with Args when the message is built
	Args   []any
	nested bool     // Cause already matches a sentinel: do not repeat Kind
	errs   [2]error // what Unwrap returns, kept so that errors.Is does not allocate
}

// Error formats the message: context, sentinel, cause.
func (e *Error) Error() string {
	op := e.Format
	if len(e.Args) > 0 {
		op = fmt.Sprintf(e.Format, e.Args...)
	}
	switch {
	case e.nested:
		return op + ": " + e.Cause.Error()
	case e.Cause != nil:
		return op + ": " + e.Kind.Error() + ": " + e.Cause.Error()
	}
	return op + ": " + e.Kind.Error()
}

// Unwrap returns the sentinel and the cause.
func (e *Error) Unwrap() []error {
	if e.errs[0] != nil {
		return e.errs[:1+boolInt(e.errs[1] != nil)]
	}
	switch {
	case e.nested:
		return []error{e.Cause}
	case e.Cause != nil:
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sentinel reports whether err is one of the sentinels above that wrap
// nothing and match only themselves (not ErrNoRuntime, which matches
// ErrIncompatible too).
func sentinel(err error) bool {
	switch err {
	case ErrUnavailable, ErrStaleHandle, ErrBadInput, ErrUnsupported, ErrNeedsStateTracking, ErrIncompatible,
		ErrIncomplete, ErrReadFailed, ErrWriteFailed, ErrCorrupt:
		return true
	}
	return false
}

// seal fills what Unwrap returns.
func (e *Error) seal() *Error {
	switch {
	case e.nested:
		e.errs[0] = e.Cause
	case e.Cause != nil:
		e.errs = [2]error{e.Kind, e.Cause}
	default:
		e.errs[0] = e.Kind
	}
	return e
}

// Is is errors.Is(err, kind) for a sentinel kind, answered without
// errors.Is's dynamic interface checks when err is an *Error or a
// *NameError of that kind: a snapshot asks it of the common answers of
// every thread ("has no generating task").
func Is(err, kind error) bool {
	switch e := err.(type) {
	case nil:
		return kind == nil
	case *NameError:
		if e.kind[0] == kind {
			return true
		}
		if e.plain {
			// A sentinel matches only itself: errors.Is would say no
			// too, only slower (the stores' errors are asked this for
			// every record of a snapshot).
			return false
		}
	case *Error:
		if e.Kind == kind {
			return true
		}
	}
	return errors.Is(err, kind)
}

// Errorf returns an error matching kind, with a context message formatted
// lazily from format and args.
func Errorf(kind error, format string, args ...any) error {
	return (&Error{Kind: kind, Format: format, Args: args}).seal()
}

// Wrap returns an error matching kind and cause, with context. If cause
// already matches one of the sentinels (it is an *Error), the result only
// adds the context and matches what cause matches.
func Wrap(kind, cause error, format string, args ...any) error {
	var e *Error
	if errors.As(cause, &e) {
		return (&Error{Kind: e.Kind, Cause: cause, Format: format, Args: args, nested: true}).seal()
	}
	var ne *NameError
	if errors.As(cause, &ne) {
		return (&Error{Kind: ne.kind[0], Cause: cause, Format: format, Args: args, nested: true}).seal()
	}
	return (&Error{Kind: kind, Cause: cause, Format: format, Args: args}).seal()
}

// Rekind returns err with the sentinel from replaced by to wherever it
// stands in err's chain of *Error and *NameError, note appended to the
// context of each error rekinded: the same messages and causes, reachable
// with errors.Is and errors.As, but matching to instead of from. An error
// of another type that matches from is wrapped in an error matching to
// whose message is its own (its chain, which would still match from, is
// not kept).
func Rekind(err, from, to error, note string) error {
	switch e := err.(type) {
	case *Error:
		c := *e
		c.errs = [2]error{}
		if c.nested {
			c.Cause = Rekind(c.Cause, from, to, note)
		} else if c.Cause != nil && errors.Is(c.Cause, from) {
			c.Cause = Rekind(c.Cause, from, to, note)
		}
		if c.Kind == from {
			c.Kind = to
			if !c.nested {
				c.Format += note
			}
		}
		return c.seal()
	case *NameError:
		if e.kind[0] != from {
			return err
		}
		n := *e
		n.kind[0], n.msg, n.plain = to, n.msg+note, sentinel(to)
		return &n
	}
	if err == nil || !errors.Is(err, from) {
		return err
	}
	return Errorf(to, "%s%s", err.Error(), note)
}

// Name names a thread, region or task in an error, formatted as the
// handles' string ids only when the message is read.
type Name struct {
	kind byte // 't' thread, 'r' region, 'k' task
	ref  Ref
	id   int32
}

// ThreadN, RegionN and TaskN name a thread, a region and a task.
func ThreadN(t ThreadRef) Name { return Name{kind: 't', ref: Ref{Addr: t.Addr}, id: t.ID} }

// RegionN names a region.
func RegionN(r Ref) Name { return Name{kind: 'r', ref: r} }

// TaskN names a task.
func TaskN(r Ref) Name { return Name{kind: 'k', ref: r} }

// String is the named object's handle id.
func (n Name) String() string {
	switch n.kind {
	case 't':
		return ThreadName{Addr: n.ref.Addr, ID: n.id}.String()
	case 'r':
		return RegionName(n.ref).String()
	}
	return TaskName(n.ref).String()
}

// NameError is an error about one named object, "NAME MSG: KIND": the
// common answers of a record ("has no generating task", "is the
// outermost region") that most callers drop unread. A record keeps a few
// in an ErrorStore, so that they cost no allocation of their own.
type NameError struct {
	name Name
	msg  string
	kind [1]error
	// plain says kind is a sentinel that matches only itself.
	plain bool
}

// Error formats the message: "NAME MSG: SENTINEL".
func (e *NameError) Error() string { return e.name.String() + e.msg + ": " + e.kind[0].Error() }

// Unwrap returns the sentinel.
func (e *NameError) Unwrap() []error { return e.kind[:] }

// ErrorStore hands out the NameErrors of one stop's records, many per
// allocation. A record has about one (a worker's implicit task
// "interrupts no task"); a store of four inside every record was half
// the size of the records a snapshot decodes, and most of the garbage the
// collector then had to scan. The zero value is ready to use; safe for
// concurrent use.
type ErrorStore struct {
	slab Slab[NameError]
}

// Error returns an error matching kind, "NAME MSG".
func (s *ErrorStore) Error(kind error, name Name, msg string) error {
	e := s.slab.New()
	*e = NameError{name: name, msg: msg, kind: [1]error{kind}, plain: sentinel(kind)}
	return e
}

// StateUnknown is the cause of a thread state a runtime package infers
// and could not (ThreadData.StateErr, which also matches ErrUnavailable):
// Reason says why in one line and names no thread, so that threads
// unknown for the same reason read alike (a tool groups them).
type StateUnknown struct {
	Reason string
}

func (u *StateUnknown) Error() string { return u.Reason }
