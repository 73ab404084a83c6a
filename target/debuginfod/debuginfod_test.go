package debuginfod

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ompd-go/ompd/internal/debuginfo"
	"github.com/stretchr/testify/require"
)

func TestFromEnv(t *testing.T) {
	env := map[string]string{"DEBUGINFOD_URLS": "http://a.invalid http://b.invalid", "HOME": "/home/u", "DEBUGINFOD_TIMEOUT": "7"}
	c := FromEnv(func(k string) string { return env[k] })
	require.NotNil(t, c)
	require.Equal(t, []string{"http://a.invalid", "http://b.invalid"}, c.URLs)
	require.Equal(t, filepath.Join("/home/u", ".cache", "debuginfod_client"), c.CacheDir)
	require.Equal(t, 7*time.Second, c.Timeout)
	require.Nil(t, FromEnv(func(string) string { return "" }))
	_, err := c.Fetch(context.Background(), nil)
	require.True(t, errors.Is(err, ErrNotFound))
}

// TestFetch serves a file from the second of two servers, then from the
// cache, and reports progress.
func TestFetch(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Path != "/buildid/0102/debuginfo" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("debug data"))
	}))
	defer srv.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	var done []Progress
	c := &Client{URLs: []string{missing.URL, srv.URL}, CacheDir: t.TempDir(), Timeout: 5 * time.Second,
		Progress: func(p Progress) {
			if p.Done {
				done = append(done, p)
			}
		}}
	path, err := c.Fetch(context.Background(), []byte{1, 2})
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "debug data", string(data))
	require.NotEmpty(t, done)
	again, err := c.Fetch(context.Background(), []byte{1, 2})
	require.NoError(t, err)
	require.Equal(t, path, again)
	require.Equal(t, 1, hits, "the second fetch comes from the cache")

	_, err = c.Fetch(context.Background(), []byte{3})
	require.ErrorIs(t, err, ErrNotFound)
	// The targets' search for debug files tells a missing file from a
	// failing server by fs.ErrNotExist.
	require.ErrorIs(t, err, fs.ErrNotExist)

	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL
	down.Close()
	c = &Client{URLs: []string{url}, CacheDir: t.TempDir(), Timeout: time.Second}
	_, err = c.Fetch(context.Background(), []byte{3})
	require.ErrorIs(t, err, ErrServer)
	require.NotErrorIs(t, err, fs.ErrNotExist)
}

// A Client is what the targets pass to the search for debug files.
var _ debuginfo.Fetcher = (*Client)(nil)
