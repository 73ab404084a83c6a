package ompd_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/target/core"
)

// readmeShow is the README's first example (section "Use", func show),
// printing to w instead of standard output. TestREADMEShowIsVerbatim keeps
// the two the same.
func readmeShow(ctx context.Context, w io.Writer, exe, corefile string) error {
	c, err := core.Open(ctx, exe, corefile) // or delve.Attach(ctx, pid), or your own target.Target
	if err != nil {
		return err
	}
	defer c.Close()
	as, err := ompd.Open(c)
	if err != nil {
		return err // errors.Is(err, ompd.ErrNoRuntime) for a program without OpenMP
	}
	for th, err := range as.Threads() { // every OpenMP thread
		if err != nil {
			return err // the thread table could not be read
		}
		state, wait, err := th.State()
		if err != nil {
			// No OMP_DEBUG=enabled (libomp), or a libgomp stack that does not tell.
			fmt.Fprintln(w, th, "state unknown:", err)
		} else {
			fmt.Fprintln(w, th, state, wait)
		}
		for p, err := range th.Regions() { // innermost first, out to level 0
			if err != nil {
				return err // a real error, once; the top ends the loop cleanly
			}
			level, _ := p.Level()
			n, _ := p.NumThreads()
			fmt.Fprintf(w, "  level %d: %d threads\n", level, n)
		}
	}
	snap, err := as.Snapshot(ctx) // everything at once, JSON-ready
	_ = snap
	return err
}

// funcBody returns the text of the function whose first line is sig, from
// src, up to its closing brace at the start of a line.
func funcBody(t *testing.T, src, sig string) string {
	t.Helper()
	i := strings.Index(src, sig)
	require.GreaterOrEqual(t, i, 0, "%q", sig)
	rest := src[i+len(sig):]
	j := strings.Index(rest, "\n}\n")
	require.GreaterOrEqual(t, j, 0)
	return rest[:j]
}

// TestREADMEShowIsVerbatim: readmeShow is the README's example, but for
// its output going to w.
func TestREADMEShowIsVerbatim(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	self, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	want := funcBody(t, string(readme), "func show(ctx context.Context, exe, corefile string) error {")
	want = strings.NewReplacer("fmt.Println(", "fmt.Fprintln(w, ", "fmt.Printf(", "fmt.Fprintf(w, ").Replace(want)
	assert.Equal(t, want, funcBody(t, string(self), "func readmeShow(ctx context.Context, w io.Writer, exe, corefile string) error {"))
}

// TestREADMEShowOnSystemGomp runs the README's first example on cores of
// gcc programs on the system's libgomp (no debug information), opened with
// core.Open's defaults as the example does. Every thread prints either the
// state its role gives or "state unknown" with the error: never a state it
// is not in (before, a failed State printed work_serial, the zero State),
// and its region nest matches the program's truth level by level.
func TestREADMEShowOnSystemGomp(t *testing.T) {
	for _, name := range []string{fixtures.Nested, fixtures.Waits} {
		t.Run(name, func(t *testing.T) {
			stop := fixtures.CoreWith(t, fixtures.SystemGomp(t), name)
			var out bytes.Buffer
			require.NoError(t, readmeShow(context.Background(), &out, stop.Exe, stop.Core))
			as := openStop(t, stop)
			threads, err := ompd.Collect(as.Threads())
			require.NoError(t, err)
			require.Len(t, threads, len(stop.Truth.Threads))
			blocks := strings.Split(out.String(), "\n")
			for _, th := range threads {
				lwp, err := th.OSThread(ompd.LWPID)
				require.NoError(t, err)
				want := stop.Truth.ThreadByTID(int(lwp))
				require.NotNil(t, want)
				// The thread's line, then its "  level" lines.
				head := th.String() + " "
				i := -1
				for k, l := range blocks {
					if strings.HasPrefix(l, head) {
						i = k
					}
				}
				require.GreaterOrEqual(t, i, 0, "thread %s in:\n%s", th, out.String())
				line := strings.TrimPrefix(blocks[i], head)
				state, _, serr := th.State()
				if serr != nil {
					assert.Equal(t, ompd.StateUndefined, state, "a state that failed is undefined")
					assert.ErrorIs(t, serr, ompd.ErrUnavailable)
					assert.True(t, strings.HasPrefix(line, "state unknown: "), "thread %s: %q", th, line)
					assert.NotEqual(t, fixtures.RoleWorking, want.Role, "a thread in user code is known")
					assert.NotEqual(t, fixtures.RoleStopper, want.Role, "a thread in user code is known")
				} else {
					assert.True(t, strings.HasPrefix(line, state.String()+" "), "thread %s: %q", th, line)
					switch want.Role {
					case fixtures.RoleWorking, fixtures.RoleStopper:
						assert.Equal(t, ompd.StateWorkParallel, state, "thread %s role %s", th, want.Role)
					case fixtures.RoleIdle:
						assert.Equal(t, ompd.StateIdle, state)
					default:
						assert.True(t, state.IsWait(), "thread %s role %s: a wait, not %v", th, want.Role, state)
					}
				}
				var levels []string
				for _, l := range blocks[i+1:] {
					if !strings.HasPrefix(l, "  level ") {
						break
					}
					levels = append(levels, l)
				}
				if want.Role == fixtures.RoleIdle {
					assert.Empty(t, levels, "an idle thread is in no region")
					continue
				}
				require.Len(t, levels, want.Level+1, "thread %s: every level down to 0", th)
				re := regexp.MustCompile(`^  level (\d+): (\d+) threads$`)
				for k, l := range levels {
					m := re.FindStringSubmatch(l)
					require.NotNil(t, m, "%q", l)
					lv := want.Level - k
					assert.Equal(t, strconv.Itoa(lv), m[1])
					assert.Equal(t, strconv.Itoa(want.Ancestors[lv].TeamSize), m[2], "team size at level %d", lv)
				}
			}
		})
	}
}

// TestGoInstallable: "go install github.com/ompd-go/ompd/cmd/ompdtool@latest",
// which the README gives, refuses a module whose go.mod has replace or
// exclude directives (they would apply only in this module); the README's
// go get needs the module path the README names.
func TestGoInstallable(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(mod), "module github.com/ompd-go/ompd\n"))
	for _, l := range strings.Split(string(mod), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 {
			assert.NotContains(t, []string{"replace", "exclude"}, f[0], "go.mod: %s", l)
		}
	}
	_, err = os.Stat("cmd/ompdtool/main.go")
	assert.NoError(t, err)
}

// TestREADMEIsShort: the README is read in five minutes (at most 200
// lines) and gives what a newcomer starts with: go get, go install of the
// inspector, the demo on a shipped core, the two commands (the test
// command exactly as .ci/run runs it), and the index of docs/.
func TestREADMEIsShort(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	text := string(readme)
	assert.LessOrEqual(t, strings.Count(text, "\n"), 200, "README.md lines")
	ci, err := os.ReadFile(".ci/run")
	require.NoError(t, err)
	var ciCmd string
	for _, l := range strings.Split(string(ci), "\n") {
		if strings.HasPrefix(l, "bash ") {
			ciCmd = l
		}
	}
	require.NotEmpty(t, ciCmd, ".ci/run runs no bash script")
	for _, want := range []string{
		"go get github.com/ompd-go/ompd ",
		"go install github.com/ompd-go/ompd/cmd/ompdtool@latest",
		"$ ompdtool demo\n",
		"go run ./cmd/ompdtool demo",
		"\n" + ciCmd + " ",
		"\nbash scripts/demo.sh ",
		"go test ./...",
		"(docs/README.md)",
	} {
		assert.Contains(t, text, want)
	}
}

// mdLink is a Markdown link's target: a relative path, maybe with an
// anchor.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks: every relative link of README.md and docs/*.md names a
// file of the repository, and its anchor a heading of that file; every
// page of docs/ is linked from the docs index.
func TestDocsLinks(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	index, err := os.ReadFile("docs/README.md")
	require.NoError(t, err)
	for _, p := range append(pages, "README.md") {
		src, err := os.ReadFile(p)
		require.NoError(t, err)
		if p != "docs/README.md" && p != "README.md" {
			assert.Contains(t, string(index), "("+filepath.Base(p)+")", "docs/README.md links %s", p)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(src), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := p
			if file != "" {
				path = filepath.Join(filepath.Dir(p), file)
			}
			body, err := os.ReadFile(path)
			if !assert.NoError(t, err, "%s links %s", p, target) || anchor == "" {
				continue
			}
			assert.Contains(t, headingAnchors(string(body)), anchor, "%s links %s", p, target)
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text: lower case, spaces as dashes, punctuation dropped.
func headingAnchors(md string) []string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// TestLayoutListsEveryPackage: docs/layout.md names every package
// directory of the module (the root's files stand for the root).
func TestLayoutListsEveryPackage(t *testing.T) {
	layout, err := os.ReadFile("docs/layout.md")
	require.NoError(t, err)
	var missing []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if path == "." {
			return nil
		}
		gofiles, _ := filepath.Glob(filepath.Join(path, "*.go"))
		if len(gofiles) == 0 {
			return nil
		}
		p := filepath.ToSlash(path)
		if !bytes.Contains(layout, []byte("`"+p+"`")) && !bytes.Contains(layout, []byte("`"+p+"/`")) {
			missing = append(missing, p)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, missing, "packages docs/layout.md does not list")
}
