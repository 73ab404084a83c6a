package ompd

import (
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// newAddressSpace returns the address space of runtime rt in t.
func newAddressSpace(t target.Target, rt omprt.Runtime) *AddressSpace {
	as := &AddressSpace{t: t}
	u := unchanged{Runtime: rt, refreshed: &as.refreshed}
	u.batch, _ = rt.(omprt.ICVBatch)
	u.keyed, _ = rt.(omprt.ICVKeyed)
	as.rt = u
	return as
}

// unchanged is the runtime of an address space, which tells a stale
// handle from corrupt memory. A handle is stale when the object it names
// was freed or reused after the handle was made; that takes a target whose
// memory changed, which the address space learns through Refresh. Until
// the first Refresh (always, on a core) every handle was made from the
// memory read now, so an object that reads as freed or replaced is
// corrupt memory: ErrCorrupt, with the runtime's words and causes, not
// ErrStaleHandle.
type unchanged struct {
	omprt.Runtime
	refreshed interface{ Load() bool }
	// batch is the runtime if it reads several ICVs at once, else nil;
	// keyed if it tells when a scope's ICVs are those read last.
	batch omprt.ICVBatch
	keyed omprt.ICVKeyed
}

func (u unchanged) fix(err error) error {
	if err == nil || u.refreshed.Load() || !omprt.Is(err, ErrStaleHandle) {
		return err
	}
	return omprt.Rekind(err, ErrStaleHandle, ErrCorrupt, " (not a stale handle: the memory has not changed since it was made)")
}

// fixAll fixes each of errs in place (on a copy of a record).
func (u unchanged) fixAll(errs ...*error) {
	for _, e := range errs {
		*e = u.fix(*e)
	}
}

// fixEach fixes each error of errs in place.
func (u unchanged) fixEach(errs []error) {
	for i, err := range errs {
		if err != nil {
			errs[i] = u.fix(err)
		}
	}
}

// anyStale reports whether one of errs would be fixed.
func (u unchanged) anyStale(errs ...error) bool {
	if u.refreshed.Load() {
		return false
	}
	for _, err := range errs {
		if err != nil && omprt.Is(err, ErrStaleHandle) {
			return true
		}
	}
	return false
}

// The records' own errors (a thread's region, a region's enclosing one)
// are answers too: fixed in a copy, the runtime's record unchanged.

func (u unchanged) Thread(r omprt.ThreadRef) (*omprt.ThreadData, error) {
	d, err := u.Runtime.Thread(r)
	if d != nil && u.anyStale(d.Err, d.PthreadErr, d.LWPErr, d.NumErr, d.StateErr, d.RegionErr, d.TaskErr, d.LeagueErr) {
		c := *d
		u.fixAll(&c.Err, &c.PthreadErr, &c.LWPErr, &c.NumErr, &c.StateErr, &c.RegionErr, &c.TaskErr, &c.LeagueErr)
		d = &c
	}
	return d, u.fix(err)
}

func (u unchanged) Region(r omprt.Ref) (*omprt.RegionData, error) {
	d, err := u.Runtime.Region(r)
	if d != nil && u.anyStale(d.FunctionErr, d.IDErr, d.EnclosingErr) {
		c := *d
		u.fixAll(&c.FunctionErr, &c.IDErr, &c.EnclosingErr)
		d = &c
	}
	return d, u.fix(err)
}

func (u unchanged) Task(r omprt.Ref) (*omprt.TaskData, error) {
	d, err := u.Runtime.Task(r)
	if d != nil && u.anyStale(d.FunctionErr, d.FramesErr, d.IDErr, d.RegionErr, d.GeneratingErr, d.SchedulingErr, d.ScheduleErr) {
		c := *d
		u.fixAll(&c.FunctionErr, &c.FramesErr, &c.IDErr, &c.RegionErr, &c.GeneratingErr, &c.SchedulingErr, &c.ScheduleErr)
		d = &c
	}
	return d, u.fix(err)
}

func (u unchanged) RegionThread(r omprt.Ref, n int) (omprt.ThreadRef, error) {
	t, err := u.Runtime.RegionThread(r, n)
	return t, u.fix(err)
}

func (u unchanged) ImplicitTask(r omprt.Ref, n int) (omprt.Ref, error) {
	t, err := u.Runtime.ImplicitTask(r, n)
	return t, u.fix(err)
}

func (u unchanged) ICV(s omprt.ScopeRef, id omprt.ICV) (omprt.Value, error) {
	v, err := u.Runtime.ICV(s, id)
	return v, u.fix(err)
}

// ICVsAt reads several ICVs of one scope, with one call if the runtime
// reads them at once (omprt.ICVBatch).
func (u unchanged) ICVsAt(s omprt.ScopeRef, ids []omprt.ICV, vals []omprt.Value, errs []error) {
	if u.batch != nil {
		u.batch.ICVsAt(s, ids, vals, errs)
	} else {
		icvsAt(u.Runtime, s, ids, vals, errs)
	}
	u.fixEach(errs)
}

// ICVsAtKeyed is omprt.ICVKeyed's, through the runtime's if it has one;
// else it reads as ICVsAt and reports false.
func (u unchanged) ICVsAtKeyed(s omprt.ScopeRef, ids []omprt.ICV, vals []omprt.Value, errs []error, key *omprt.ICVKey) bool {
	if u.keyed == nil {
		*key = omprt.ICVKey{}
		u.ICVsAt(s, ids, vals, errs)
		return false
	}
	if u.keyed.ICVsAtKeyed(s, ids, vals, errs, key) {
		return true
	}
	u.fixEach(errs)
	return false
}

// icvsAt reads the ICVs ids at scope s from rt, as one batch where rt
// reads them so.
func icvsAt(rt omprt.Runtime, s omprt.ScopeRef, ids []omprt.ICV, vals []omprt.Value, errs []error) {
	if b, ok := rt.(omprt.ICVBatch); ok {
		b.ICVsAt(s, ids, vals, errs)
		return
	}
	for i, id := range ids {
		vals[i], errs[i] = rt.ICV(s, id)
	}
}
