package delve

import (
	"context"
	"os"
	"testing"

	"github.com/go-delve/delve/pkg/version"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestWorkaroundsVerified fails when go.mod pins a Delve version other
// than the one a workaround of a Delve bug was verified with: check the
// bug (its report names the code) in the new Delve, then drop the
// workaround or record the version it was checked with.
func TestWorkaroundsVerified(t *testing.T) {
	linked := versionString(version.DelveVersion)
	for _, w := range workarounds {
		assert.Equal(t, linked, w.verified, "go.mod's Delve is %s: check the workaround of %s against it (see %s)", linked, w.name, w.doc)
		_, err := os.Stat(w.doc)
		assert.NoError(t, err, "the report of %s", w.name)
	}
}

// TestDelveVersionGate: the workarounds run on the Delve version they were
// verified with (the one go.mod pins, which this test binary links) and
// refuse any other loudly, naming each.
func TestDelveVersionGate(t *testing.T) {
	require.NoError(t, checkDelveVersion(version.DelveVersion), "the pinned Delve")
	for _, v := range []version.Version{
		{Major: "1", Minor: "28", Patch: "0"},
		{Major: "1", Minor: "27", Patch: "1"},
		{Major: "1", Minor: "27", Patch: "2", Metadata: "dev"},
		{Major: "2", Minor: "0", Patch: "0"},
	} {
		err := checkDelveVersion(v)
		assert.ErrorIs(t, err, ErrDelveVersion, "%+v", v)
		assert.ErrorContains(t, err, "memthread.md")
		assert.ErrorContains(t, err, "wedge.md")
	}
}

// TestDelveVersionGateLive: with a Delve version the workaround was not
// verified with (set here in Delve's own version variable, as a program
// linking another Delve would have it), Launch and Attach refuse to start
// and Continue refuses to resume, each with ErrDelveVersion, leaving the
// process stopped where it was; with the pinned version back it runs on.
func TestDelveVersionGateLive(t *testing.T) {
	r := newRun(t, fixtures.Nested)
	p := r.launch(t)
	ctx := testContext(t)
	pinned := version.DelveVersion
	t.Cleanup(func() { version.DelveVersion = pinned })
	version.DelveVersion = version.Version{Major: "1", Minor: "99", Patch: "0"}

	_, err := Launch(context.Background(), []string{r.exe}, WithEnv(r.env))
	assert.ErrorIs(t, err, ErrDelveVersion)
	assert.ErrorContains(t, err, "1.99.0")
	_, err = Attach(context.Background(), p.Pid())
	assert.ErrorIs(t, err, ErrDelveVersion)

	before, err := p.Threads()
	require.NoError(t, err)
	err = p.Continue(ctx)
	assert.ErrorIs(t, err, ErrDelveVersion)
	assert.ErrorContains(t, err, "memthread.md")
	_, err = p.RunToFunction(ctx, "stopme")
	assert.ErrorIs(t, err, ErrDelveVersion)
	after, err := p.Threads()
	require.NoError(t, err, "the process is still there, stopped")
	assert.Equal(t, before, after, "not resumed: still at its entry, one thread")

	version.DelveVersion = pinned
	stops, err := p.RunToFunction(ctx, "stopme")
	require.NoError(t, err)
	assert.NotEmpty(t, stops)
}
