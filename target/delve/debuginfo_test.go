package delve

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/kmp"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/debuginfod"
)

// TestStrippedRuntimeLive runs the nested fixture against a copy of the
// runtime stripped as distributions strip it, its debug file kept apart,
// and reads the live process: without debug information the runtime is
// read through the table of its known release, with a debug directory or a
// debuginfod server every answer matches the program's truth.
func TestStrippedRuntimeLive(t *testing.T) {
	s := fixtures.StripRuntime(t, fixtures.RuntimeVariant(t, fixtures.VariantOMPD))
	r := newRun(t, fixtures.Nested)
	r.exe = fixtures.BuildWith(t, fixtures.Nested, s.RuntimeInfo)

	stop := func(t *testing.T, opts ...Option) *Process {
		t.Helper()
		p, err := Launch(context.Background(), []string{r.exe}, append([]Option{WithEnv(r.env)}, opts...)...)
		unavailable(t, err)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Kill() })
		_, err = p.RunToFunction(testContext(t), "stopme")
		require.NoError(t, err)
		return p
	}

	// libomp returns the stripped runtime's entry of the process's objects.
	libomp := func(t *testing.T, p *Process) target.Object {
		t.Helper()
		objs, err := p.Objects()
		require.NoError(t, err)
		for _, o := range objs {
			if o.Path == s.LibOMP {
				assert.Equal(t, s.BuildID, o.BuildID, "%+v", o)
				assert.NoError(t, o.Err)
				return o
			}
		}
		t.Fatalf("no %s among %+v", s.LibOMP, objs)
		return target.Object{}
	}

	t.Run("no debug information", func(t *testing.T) {
		p := stop(t, WithDebugDirs())
		rt, err := kmp.Open(p)
		require.NoError(t, err)
		as, err := ompd.Open(stockCheck{p, rt.(*kmp.Runtime)})
		require.NoError(t, err)
		defer as.Close()
		assert.Equal(t, ompd.LayoutKnownTable, as.Runtime().Layout, "read as the known release it is a build of")
		ompdtest.CheckTruth(t, as, r.truth(t))
		assert.ErrorIs(t, libomp(t, p).DebugErr, target.ErrNoDebugFile)
	})

	t.Run("debug directory", func(t *testing.T) {
		dir := t.TempDir()
		link := s.BuildIDPath(dir)
		require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
		require.NoError(t, os.Symlink(s.DebugFile, link))
		p := stop(t, WithDebugDirs(dir))
		as, err := ompd.Open(p)
		require.NoError(t, err)
		defer as.Close()
		ompdtest.CheckTruth(t, as, r.truth(t))
		o := libomp(t, p)
		assert.NoError(t, o.DebugErr)
		assert.Equal(t, link, o.DebugFile)
	})

	t.Run("debuginfod", func(t *testing.T) {
		data, err := os.ReadFile(s.DebugFile)
		require.NoError(t, err)
		want := "/buildid/" + hex.EncodeToString(s.BuildID) + "/debuginfo"
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Path != want {
				http.NotFound(w, req)
				return
			}
			hits.Add(1)
			w.Write(data)
		}))
		defer srv.Close()
		client := &debuginfod.Client{URLs: []string{srv.URL}, CacheDir: t.TempDir(), Timeout: 30 * time.Second}
		p := stop(t, WithDebugDirs(), WithDebuginfod(client))
		as, err := ompd.Open(p)
		require.NoError(t, err)
		defer as.Close()
		ompdtest.CheckTruth(t, as, r.truth(t))
		assert.Equal(t, int32(1), hits.Load(), "the debug file is downloaded once")
	})
}
