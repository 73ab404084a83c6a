package apimap

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the module root, from this package's directory.
const root = "../.."

// TestEveryFunctionMapped: every OMPD function of the texts has a Go name
// (a doc comment of package ompd or target names it) or is listed as not
// applicable with why; none is both; nothing else is listed.
func TestEveryFunctionMapped(t *testing.T) {
	rows, err := Table(root)
	require.NoError(t, err)
	fns, err := Functions()
	require.NoError(t, err)
	assert.Len(t, rows, len(fns))
	assert.Greater(t, len(fns), 60, "every function of the texts")
}

// TestTableUpToDate: docs/ompd-api.md is what go generate writes from the
// code as it is.
func TestTableUpToDate(t *testing.T) {
	rows, err := Table(root)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(root, Doc))
	require.NoError(t, err, "go generate ./internal/apimap writes it")
	assert.Equal(t, string(Markdown(rows))+"\n", string(got), "stale: go generate ./internal/apimap")
}

// TestMentions: the doc comment convention. A name counts inside
// parentheses, before a semicolon there; not in running text, not after
// the semicolon, not as a prefix ending in an underscore.
func TestMentions(t *testing.T) {
	for doc, want := range map[string][]string{
		"Level returns the level (ompd_get_level; omp_get_level in it).":                        {"ompd_get_level"},
		"The region (ompd_get_curr_parallel_handle, the drafts' ompd_get_top_parallel_region).": {"ompd_get_curr_parallel_handle", "ompd_get_top_parallel_region"},
		"A (ompd_get_task_in_parallel /\n// ompd_get_implicit_task_in_parallel).":               {"ompd_get_task_in_parallel", "ompd_get_implicit_task_in_parallel"},
		"At ompd_bp_parallel_end the number is reset.":                                          nil,
		"A limit (OMP_THREAD_LIMIT; ompd_get_thread_limit).":                                    nil,
		"Breakpoints (ompd_bp_*).":                                                              nil,
	} {
		assert.Equal(t, want, Mentions(doc), doc)
	}
}
