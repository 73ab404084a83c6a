package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run's figures: medians and ranges over the runs of each benchmark of
// each output file, GOMAXPROCS suffixes dropped, conditions by key, and
// the template's formats.
func TestFill(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("conditions.txt", "commit: abc1234\nload before: 0.50 0.40 0.30\n")
	write("compare.txt", `goos: linux
BenchmarkSnapshot/threads=256/target=core/impl=ompd-go-2   5   3000000 ns/op   4100000 cpu-ns/op   85.00 reads/op   960 allocs/op
BenchmarkSnapshot/threads=256/target=core/impl=ompd-go-2   5   3500000 ns/op   3900000 cpu-ns/op   85.00 reads/op   962 allocs/op
BenchmarkSnapshot/threads=256/target=core/impl=ompd-go-2   5   9000000 ns/op   4000000 cpu-ns/op   85.00 reads/op   961 allocs/op
BenchmarkSnapshot/threads=256/target=core/impl=libompd-2   5  70000000 ns/op  72000000 cpu-ns/op  19560 reads/op
PASS
`)
	write("live-2.txt", "BenchmarkLiveVsCore/threads=256/target=live-2  5  1000 ns/op  1200 cpu-ns/op\n")
	write("profile-after-cpu.txt", `File: compare.test
Type: cpu
Showing nodes accounting for 1.2s, 80% of 1.5s total
      flat  flat%   sum%        cum   cum%
     0.30s 20.00% 20.00%      0.30s 20.00%  runtime.memmove
     0.20s 13.33% 33.33%      0.20s 13.33%  syscall.Syscall6
     0.10s  6.67% 40.00%      0.10s  6.67%  runtime.mallocgc
`)
	tmpl := filepath.Join(dir, "doc.tmpl")
	require.NoError(t, os.WriteFile(tmpl, []byte(`{{$o := get "compare" "BenchmarkSnapshot/threads=256/target=core/impl=ompd-go" -}}
{{$l := get "compare" "BenchmarkSnapshot/threads=256/target=core/impl=libompd" -}}
commit {{cond "commit"}}, load {{cond "load before"}}
cpu {{$o.MsR "cpu-ns/op"}} wall {{$o.M "ns/op" | ms}} reads {{$l.M "reads/op" | count}} allocs {{$o.M "allocs/op" | count}}
ratio {{x (div ($l.M "cpu-ns/op") ($o.M "cpu-ns/op"))}} {{met (ge (div ($l.M "cpu-ns/op") ($o.M "cpu-ns/op")) 20.0)}}
live {{(get "live-2" "BenchmarkLiveVsCore/threads=256/target=live").M "cpu-ns/op" | us}}
{{top "after-cpu" 2}}
`), 0o644))
	var out bytes.Buffer
	require.NoError(t, write2(&out, dir, tmpl))
	assert.Equal(t, `commit abc1234, load 0.50 0.40 0.30
cpu 4.00 ms (3.90-4.10) wall 3.50 ms reads 19,560 allocs 961
ratio 18.0x **no**
live 1.20 µs
Showing nodes accounting for 1.2s, 80% of 1.5s total
      flat  flat%   sum%        cum   cum%
     0.30s 20.00% 20.00%      0.30s 20.00%  runtime.memmove
     0.20s 13.33% 33.33%      0.20s 13.33%  syscall.Syscall6
`, out.String())

	// A figure the run does not have is an error naming it, not a blank.
	require.NoError(t, os.WriteFile(tmpl, []byte(`{{(get "compare" "BenchmarkSnapshot/threads=1024/target=core/impl=ompd-go").M "cpu-ns/op"}}`), 0o644))
	err := write2(&out, dir, tmpl)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no BenchmarkSnapshot/threads=1024/target=core/impl=ompd-go in")
	require.NoError(t, os.WriteFile(tmpl, []byte(`{{(get "compare" "BenchmarkSnapshot/threads=256/target=core/impl=libompd").M "allocs/op"}}`), 0o644))
	err = write2(&out, dir, tmpl)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no allocs/op of BenchmarkSnapshot/threads=256/target=core/impl=libompd")
}

// write2 is write, into a buffer reset first.
func write2(out *bytes.Buffer, dir, tmpl string) error {
	out.Reset()
	return write(out, dir, tmpl, filepath.Join(dir, "current.md"))
}

// The document's template parses with the functions benchdoc gives it.
func TestTemplateParses(t *testing.T) {
	text, err := os.ReadFile("benchmarks.md.tmpl")
	require.NoError(t, err)
	r := &results{}
	_, err = template.New("doc").Funcs(r.funcs()).Parse(string(text))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(strings.TrimLeft(string(text), " \n"), "{{- /*"), "the template says it is one")
}

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{{17.83, "17.8"}, {0.4234, "0.423"}, {209.4, "209"}, {4.07, "4.07"}, {12345, "12345"}, {0, "0"}} {
		assert.Equal(t, c.want, sig(c.f), "%v", c.f)
	}
	for _, c := range []struct {
		f    float64
		want string
	}{{19560, "19,560"}, {85, "85"}, {1234567, "1,234,567"}, {-1234, "-1,234"}, {999.6, "1,000"}} {
		assert.Equal(t, c.want, count(c.f), "%v", c.f)
	}
}

// Profile lines lose the module path and generic code's spelled-out type
// arguments, nested brackets included.
func TestShorten(t *testing.T) {
	in := "  84.21MB 14.44% 14.44%    84.21MB 14.44%  github.com/ompd-go/ompd/internal/kmp.(*slab[go.shape.struct { a []int; b map[string][]byte }]).new"
	assert.Equal(t, "  84.21MB 14.44% 14.44%    84.21MB 14.44%  internal/kmp.(*slab[…]).new", shorten(in))
	assert.Equal(t, "omprt.(*Cache[…]).Get and carve[…] (inline)", shorten("omprt.(*Cache[go.shape.uint64,go.shape.*uint8]).Get and carve[go.shape.6083fc] (inline)"))
	assert.Equal(t, "broken […]", shorten("broken [go.shape.struct { a [3"))
	assert.Equal(t, "ompd.(*snap).appendICVs", shorten("github.com/ompd-go/ompd.(*snap).appendICVs"))
}

// A section another script fills is copied from the current document,
// through the line before the next heading; a missing one is an error.
func TestSection(t *testing.T) {
	dir := t.TempDir()
	cur := filepath.Join(dir, "current.md")
	require.NoError(t, os.WriteFile(cur, []byte("# Doc\n\n## Soak: hours\n\ntable\n| a |\n\n## Next\nx\n## Last one\ny\n"), 0o644))
	r := &results{current: cur}
	got, err := r.section("Soak")
	require.NoError(t, err)
	assert.Equal(t, "## Soak: hours\n\ntable\n| a |", got)
	got, err = r.section("Last")
	require.NoError(t, err)
	assert.Equal(t, "## Last one\ny", got)
	_, err = r.section("Nope")
	assert.ErrorContains(t, err, `section "Nope": no such heading`)
	_, err = (&results{}).section("Soak")
	assert.Error(t, err)
	got, err = r.keep("Nope")
	require.NoError(t, err, "keep: a section the document does not have yet")
	assert.Empty(t, got)
	got, err = r.keep("Soak")
	require.NoError(t, err)
	assert.Equal(t, "## Soak: hours\n\ntable\n| a |", got)
}
