package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target/core"
)

// When the runtime cannot be read, what needs no runtime knowledge is
// still printed: every thread, with -bt its stack.
func TestOSThreadsFallback(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Nested)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	var out bytes.Buffer
	o := &options{bt: true}
	o.printOSThreads(context.Background(), c, &out)
	t.Log(out.String())
	assert.Contains(t, out.String(), fmt.Sprintf("%d threads:", len(stop.Truth.Threads)))
	for _, tt := range stop.Truth.Threads {
		assert.Contains(t, out.String(), fmt.Sprintf("lwp %d ", tt.TID))
	}
	assert.Contains(t, out.String(), "stopme < fx_stop")
	unwound := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasSuffix(l, " < _start") || strings.HasSuffix(l, " < __GI___clone3") {
			unwound++
		}
	}
	assert.Equal(t, len(stop.Truth.Threads), unwound, "every stack unwound to the thread's start")

	// Only an unreadable runtime gives that listing.
	assert.True(t, unreadable(omprt.Errorf(ompd.ErrIncompatible, "stripped")))
	assert.False(t, unreadable(omprt.Errorf(ompd.ErrNoRuntime, "none")))
	assert.False(t, unreadable(omprt.Errorf(ompd.ErrReadFailed, "gone")))
}
