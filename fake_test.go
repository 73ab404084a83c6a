package ompd_test

// Helpers of the tests over synthetic runtime memory (internal/fakeruntime):
// every configuration a real runtime on this machine cannot show
// (big-endian, 32-bit, sub-page mappings), runtime layouts other than
// LLVM's, and corrupt or stale runtime state. The tests themselves sit
// with the code they test (thread_test.go for thread.go, and so on).
//
// Tests that once found a bug in the package name the code that was at
// fault with the bug's exact symptom (see fakeKnownBug), so that a regression
// fails with a message saying what broke again.

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/target"
)

// fakeConfigs are the target configurations every functional test runs
// over: little-endian LP64, big-endian LP64, little-endian ILP32, and
// little-endian LP64 with every runtime structure in its own sub-page
// mapping (so that the page cache must fall back to exact reads).
var fakeConfigs = []fakeruntime.Config{
	{ByteOrder: binary.LittleEndian, Sizes: target.LP64},
	{ByteOrder: binary.BigEndian, Sizes: target.LP64},
	{ByteOrder: binary.LittleEndian, Sizes: target.ILP32},
	{ByteOrder: binary.LittleEndian, Sizes: target.LP64, Tiny: true},
}

func forEachFake(t *testing.T, f func(t *testing.T, cfg fakeruntime.Config)) {
	t.Helper()
	for _, cfg := range fakeConfigs {
		t.Run(cfg.Name(), func(t *testing.T) {
			t.Parallel()
			f(t, cfg)
		})
	}
}

// fakeKnownBug fails the test with the description of a bug the package had
// when its symptom shows again.
func fakeKnownBug(t *testing.T, symptom bool, format string, args ...any) {
	t.Helper()
	if symptom {
		t.Fatal("REGRESSION of a fixed bug: " + fmt.Sprintf(format, args...))
	}
}

func fakeOpenNested(t *testing.T, cfg fakeruntime.Config) (*fakeruntime.Scenario, *ompd.AddressSpace) {
	t.Helper()
	s := fakeruntime.Nested(cfg)
	as, err := ompd.Open(s.T)
	require.NoError(t, err)
	return s, as
}

// fakeThreads returns the address space's threads by gtid.
func fakeThreads(t *testing.T, as *ompd.AddressSpace) map[int]ompd.Thread {
	t.Helper()
	ths, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	out := make(map[int]ompd.Thread)
	for _, th := range ths {
		out[th.GTID()] = th
	}
	return out
}

// fakeBounded runs f and fails the test if it does not return within d: a
// walk of corrupt memory must end.
func fakeBounded(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not end within %v", what, d)
	}
}

// fakePanics runs f and returns the value it panicked with, or nil.
func fakePanics(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}
