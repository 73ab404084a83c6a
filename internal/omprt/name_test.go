package omprt

import "testing"

func TestOSThreadName(t *testing.T) {
	for _, c := range []struct {
		kind int
		id   uint64
		want string
	}{
		{IDLWP, 19440, "lwp 19440"},
		{IDPthread, 0x7ffff7ca8740, "pthread 0x7ffff7ca8740"},
		{7, 10, "ThreadIDKind(7) 0xa"},
	} {
		if got := OSThreadName(c.kind, c.id); got != c.want {
			t.Errorf("OSThreadName(%d, %d) = %q, want %q", c.kind, c.id, got, c.want)
		}
	}
}
