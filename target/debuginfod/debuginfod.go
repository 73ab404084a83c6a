// Package debuginfod fetches separate debug files from debuginfod servers,
// as elfutils' clients do: a Client names the servers and a cache
// directory, FromEnv builds one from DEBUGINFOD_URLS and its companions.
// target/core, target/delve and target/delverpc take a *Client
// (WithDebuginfod) to find the OpenMP runtime's symbols when its library is
// stripped and no debug file is installed.
package debuginfod

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ompd-go/ompd/target"
)

var (
	// ErrServer reports that no debuginfod server could give the file:
	// every server answered an error, could not be reached, or timed out.
	// It is target.ErrDebugServer, which the targets' Objects report.
	ErrServer = target.ErrDebugServer
	// ErrNotFound reports that every server said it has no such file (or
	// the build-id was empty). It also matches fs.ErrNotExist, which is
	// how the targets' search for debug files (a Client is what they
	// call to fetch one) tells a missing file from a failing server.
	ErrNotFound error = notFound{}
)

// notFound is ErrNotFound.
type notFound struct{}

func (notFound) Error() string { return "debuginfod: no server has the file" }

// Is makes ErrNotFound match fs.ErrNotExist.
func (notFound) Is(target error) bool { return target == fs.ErrNotExist }

// maxDebugFile bounds what a debuginfod download may write to the cache.
const maxDebugFile = 4 << 30

// Client fetches debug files from debuginfod servers (GET
// URL/buildid/HEX/debuginfo) into a local cache directory.
type Client struct {
	// URLs are the servers, tried in order.
	URLs []string
	// CacheDir holds downloaded files as CacheDir/HEX/debuginfo.
	CacheDir string
	// Timeout bounds each request (default 90 s, as elfutils uses).
	Timeout time.Duration
	// HTTP is the client used; nil means http.DefaultClient.
	HTTP *http.Client
	// Progress, if set, is called as a download starts, about every
	// megabyte it receives, and when it ends, so that a tool can say what
	// it is waiting for. It is not called for files already in the cache.
	Progress func(Progress)
}

// Progress describes a debuginfod download under way (see Client.Progress).
type Progress struct {
	BuildID  string // hexadecimal
	URL      string
	Received int64 // bytes so far
	Total    int64 // the server's Content-Length, or -1 when it sent none
	Done     bool  // the last call for this URL; Err tells whether it failed
	Err      error
}

// progressWriter counts the bytes of a download and reports them.
type progressWriter struct {
	p    Progress
	f    func(Progress)
	next int64
}

func (w *progressWriter) Write(b []byte) (int, error) {
	w.p.Received += int64(len(b))
	if w.p.Received >= w.next {
		w.f(w.p)
		w.next = w.p.Received + 1<<20
	}
	return len(b), nil
}

// FromEnv builds a client from the debuginfod conventions:
// DEBUGINFOD_URLS (space-separated server URLs), DEBUGINFOD_CACHE_PATH
// (default $XDG_CACHE_HOME/debuginfod_client or ~/.cache/debuginfod_client)
// and DEBUGINFOD_TIMEOUT (seconds). It returns nil when DEBUGINFOD_URLS is
// empty. getenv is os.Getenv or a replacement for tests.
func FromEnv(getenv func(string) string) *Client {
	urls := strings.Fields(getenv("DEBUGINFOD_URLS"))
	if len(urls) == 0 {
		return nil
	}
	c := &Client{URLs: urls, CacheDir: getenv("DEBUGINFOD_CACHE_PATH")}
	if c.CacheDir == "" {
		base := getenv("XDG_CACHE_HOME")
		if base == "" {
			if home := getenv("HOME"); home != "" {
				base = filepath.Join(home, ".cache")
			} else {
				base = os.TempDir()
			}
		}
		c.CacheDir = filepath.Join(base, "debuginfod_client")
	}
	if s, err := strconv.Atoi(getenv("DEBUGINFOD_TIMEOUT")); err == nil && s > 0 {
		c.Timeout = time.Duration(s) * time.Second
	}
	return c
}

// Fetch returns the path of the debug file with the given build-id, from the
// cache or else downloaded from the first server that has it.
func (c *Client) Fetch(ctx context.Context, buildID []byte) (string, error) {
	if len(buildID) == 0 {
		return "", fmt.Errorf("debuginfod: empty build-id: %w", ErrNotFound)
	}
	h := hex.EncodeToString(buildID)
	dir := filepath.Join(c.CacheDir, h)
	dst := filepath.Join(dir, "debuginfo")
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	var errs []string
	notFound := 0
	for _, u := range c.URLs {
		err := c.fetchOne(ctx, h, strings.TrimRight(u, "/")+"/buildid/"+h+"/debuginfo", dir, dst)
		if err == nil {
			return dst, nil
		}
		if errors.Is(err, ErrNotFound) {
			notFound++
		}
		errs = append(errs, err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	if notFound == len(c.URLs) {
		return "", fmt.Errorf("debuginfod: build-id %s: %s: %w", h, strings.Join(errs, "; "), ErrNotFound)
	}
	return "", fmt.Errorf("debuginfod: build-id %s: %s: %w", h, strings.Join(errs, "; "), ErrServer)
}

func (c *Client) fetchOne(ctx context.Context, buildID, url, dir, dst string) (err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%s: %v", url, err)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s: 404: %w", url, ErrNotFound)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %s", url, resp.Status)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".part-*")
	if err != nil {
		return err
	}
	var body io.Reader = resp.Body
	if c.Progress != nil {
		pw := &progressWriter{p: Progress{BuildID: buildID, URL: url, Total: resp.ContentLength}, f: c.Progress}
		c.Progress(pw.p)
		pw.next = 1 << 20
		body = io.TeeReader(body, pw)
		defer func() {
			pw.p.Done = true
			pw.p.Err = err
			c.Progress(pw.p)
		}()
	}
	n, err := io.Copy(tmp, io.LimitReader(body, maxDebugFile+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > maxDebugFile {
		err = fmt.Errorf("larger than %d bytes", int64(maxDebugFile))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %v", url, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
