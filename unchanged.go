package ompd

import (
	"errors"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// newAddressSpace returns the address space of runtime rt in t.
func newAddressSpace(t target.Target, rt omprt.Runtime) *AddressSpace {
	as := &AddressSpace{t: t}
	u := unchanged{Runtime: rt, refreshed: &as.refreshed}
	u.batch, _ = rt.(omprt.ICVBatch)
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
	// batch is the runtime if it reads several ICVs at once, else nil.
	batch omprt.ICVBatch
}

func (u unchanged) fix(err error) error {
	if err == nil || u.refreshed.Load() || !errors.Is(err, ErrStaleHandle) {
		return err
	}
	return omprt.Rekind(err, ErrStaleHandle, ErrCorrupt, " (not a stale handle: the memory has not changed since it was made)")
}

func (u unchanged) Thread(r omprt.ThreadRef) (*omprt.ThreadData, error) {
	d, err := u.Runtime.Thread(r)
	return d, u.fix(err)
}

func (u unchanged) Region(r omprt.Ref) (*omprt.RegionData, error) {
	d, err := u.Runtime.Region(r)
	return d, u.fix(err)
}

func (u unchanged) Task(r omprt.Ref) (*omprt.TaskData, error) {
	d, err := u.Runtime.Task(r)
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
	for i, err := range errs {
		if err != nil {
			errs[i] = u.fix(err)
		}
	}
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
