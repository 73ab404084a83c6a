package omprt

import (
	"strconv"
	"testing"
)

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

// appendHex writes what strconv does, for every digit count.
func TestAppendHex(t *testing.T) {
	xs := []uint64{0, 1, 0xf, 0x10, 0x555555c3e0c0, 0x7fffffffffff, 1<<63 + 5, ^uint64(0)}
	for i := range 64 {
		xs = append(xs, 1<<i, 1<<i-1, 0x9e3779b97f4a7c15>>i)
	}
	for _, x := range xs {
		if got, want := string(appendHex([]byte("@"), x)), "@"+strconv.FormatUint(x, 16); got != want {
			t.Errorf("appendHex(%#x) = %q, want %q", x, got, want)
		}
	}
	if got := (TaskName{Addr: 0x555555c1a280, Level: 0}).String(); got != "task/0x555555c1a280/L0" {
		t.Errorf("TaskName = %q", got)
	}
	if got := (ThreadName{Addr: 0x555555c3e0c0, ID: 9}).String(); got != "thread/9@0x555555c3e0c0" {
		t.Errorf("ThreadName = %q", got)
	}
	if got := (RegionName{Addr: 0x555555c20100, Level: 1}).String(); got != "parallel/0x555555c20100/L1" {
		t.Errorf("RegionName = %q", got)
	}
}
