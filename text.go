package ompd

import (
	"strconv"
	"strings"
)

// The enumerations encode as their String text (encoding.TextMarshaler),
// so that a Snapshot's JSON reads "wait_barrier_explicit", not 20, and
// decode from it again. An unknown value encodes as String writes it
// ("State(7)", a flag set's hexadecimal rest) and decodes back the same.

// parseEnum returns the value among values whose String is text, or n
// for the text "typ(n)".
func parseEnum[T ~int | ~int64](typ string, text []byte, values []T, str func(T) string) (T, error) {
	s := string(text)
	for _, v := range values {
		if str(v) == s {
			return v, nil
		}
	}
	if rest, ok := strings.CutPrefix(s, typ+"("); ok {
		if num, ok := strings.CutSuffix(rest, ")"); ok {
			if n, err := strconv.ParseInt(num, 0, 64); err == nil && int64(T(n)) == n {
				return T(n), nil
			}
		}
	}
	return 0, errorf(ErrBadInput, "no %s is named %q", typ, s)
}

// MarshalText returns the state's name (String).
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText sets s to the state named text (as String names it).
func (s *State) UnmarshalText(text []byte) (err error) {
	*s, err = parseEnum("State", text, states[:], State.String)
	return err
}

// MarshalText returns the scope's name (String).
func (k ScopeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText sets k to the scope named text (as String names it).
func (k *ScopeKind) UnmarshalText(text []byte) (err error) {
	*k, err = parseEnum("ScopeKind", text,
		[]ScopeKind{ScopeGlobal, ScopeAddressSpace, ScopeThread, ScopeParallel, ScopeImplicitTask, ScopeTask}, ScopeKind.String)
	return err
}

// MarshalText returns the layout source's name (String).
func (l LayoutSource) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText sets l to the layout source named text (as String names
// it).
func (l *LayoutSource) UnmarshalText(text []byte) (err error) {
	*l, err = parseEnum("LayoutSource", text,
		[]LayoutSource{LayoutOMPDTables, LayoutDWARF, LayoutKnownTable}, LayoutSource.String)
	return err
}

// MarshalText returns the wait's name (String; "" for WaitNone).
func (w WaitKind) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

// UnmarshalText sets w to the wait named text (as String names it).
func (w *WaitKind) UnmarshalText(text []byte) (err error) {
	*w, err = parseEnum("WaitKind", text,
		[]WaitKind{WaitNone, WaitTaskwait, WaitTaskgroup, WaitBarrier, WaitParallel}, WaitKind.String)
	return err
}

// MarshalText returns the ICV's name (String).
func (i ICV) MarshalText() ([]byte, error) { return []byte(i.String()), nil }

// UnmarshalText sets i to the ICV named text (its name, an alias
// ICVByName knows, or "ICV(n)").
func (i *ICV) UnmarshalText(text []byte) (err error) {
	if id, ok := ICVByName(string(text)); ok {
		*i = id
		return nil
	}
	*i, err = parseEnum("ICV", text, nil, ICV.String)
	return err
}

// MarshalText returns the flags' text (String, e.g. "explicit|untied").
func (k TaskKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText sets k to the flags text lists (as String writes them).
func (k *TaskKind) UnmarshalText(text []byte) error {
	var out TaskKind
	if s := string(text); s != "0" {
	parts:
		for _, p := range strings.Split(s, "|") {
			for _, e := range kindNames {
				if p == e.name {
					out |= e.k
					continue parts
				}
			}
			n, err := strconv.ParseUint(p, 0, 32)
			if err != nil || !strings.HasPrefix(p, "0x") {
				return errorf(ErrBadInput, "no task flag is named %q (in %q)", p, s)
			}
			out |= TaskKind(n)
		}
	}
	*k = out
	return nil
}

// MarshalText returns the flags' text (String, e.g. "runtime|cfa").
func (f FrameFlags) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// frameKinds are the kinds of frame address FrameFlags.String names.
var frameKinds = map[string]FrameFlags{"cfa": FrameCFA, "framepointer": FrameFramePointer, "stackaddress": FrameStackAddress}

// UnmarshalText sets f to the flags text names (as String writes them).
func (f *FrameFlags) UnmarshalText(text []byte) error {
	s := string(text)
	owner, kind, hasKind := strings.Cut(s, "|")
	var out FrameFlags
	switch owner {
	case "application":
		out = FrameApplication
	case "runtime":
	default:
		return errorf(ErrBadInput, "frame flags %q: no owner %q", s, owner)
	}
	if hasKind {
		k, ok := frameKinds[kind]
		if !ok {
			return errorf(ErrBadInput, "frame flags %q: no kind %q", s, kind)
		}
		out |= k
	}
	*f = out
	return nil
}
