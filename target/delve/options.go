package delve

import (
	"context"
	"os"

	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/targetopt"
	"github.com/ompd-go/ompd/target/debuginfod"
)

// An Option configures Launch, Attach and New. The debug-information
// options (WithDebugDirs, WithDebuginfod, WithDebuginfodFromEnv,
// WithDebugContext) configure the Target that reads the process, and apply
// to all three; the others configure the program Launch starts.
type Option func(*launchConfig)

// launchConfig is what the options set.
type launchConfig struct {
	env            []string
	envSet         bool
	extraEnv       []string
	dir            string
	stdin          *os.File
	stdout, stderr *os.File
	debug          targetopt.Debug
}

// objOptions are the objfile options the configuration asks for: where
// separate debug files of stripped objects (libomp, typically) are looked
// for.
func (c *launchConfig) objOptions() []objfile.Option {
	c.debug.Resolve()
	return c.debug.ObjOptions()
}

// WithEnv sets the whole environment of the launched program, as
// exec.Cmd.Env does. Without it the program inherits the caller's
// environment.
func WithEnv(env []string) Option {
	return func(c *launchConfig) { c.env, c.envSet = env, true }
}

// WithExtraEnv adds KEY=value entries to the launched program's
// environment (the caller's, or the one WithEnv set), overriding entries of
// the same name. For instance WithExtraEnv("OMP_DEBUG=enabled").
func WithExtraEnv(kv ...string) Option {
	return func(c *launchConfig) { c.extraEnv = append(c.extraEnv, kv...) }
}

// WithDir sets the working directory of the launched program. Without it
// the program starts in the caller's working directory.
func WithDir(dir string) Option {
	return func(c *launchConfig) { c.dir = dir }
}

// WithStdio sets the standard input, output and error of the launched
// program. A nil file keeps the default: /dev/null for input, the caller's
// standard output and error for the others.
func WithStdio(stdin, stdout, stderr *os.File) Option {
	return func(c *launchConfig) { c.stdin, c.stdout, c.stderr = stdin, stdout, stderr }
}

// WithDebugDirs sets the global debug directories where separate debug
// files are looked for, by build-id (DIR/.build-id/xx/rest.debug) and by
// debuglink, both by Delve and by this package's symbol lookups (which need
// libomp's local symbols), as core.WithDebugDirs does for cores. Without it
// /usr/lib/debug is searched; with no directories, none is. A debug file of
// another build is never used.
func WithDebugDirs(dirs ...string) Option {
	return func(c *launchConfig) { c.debug.SetDirs(dirs...) }
}

// WithDebuginfod makes symbol lookups fetch missing debug files from the
// client's debuginfod servers; nil means no server (the default).
func WithDebuginfod(client *debuginfod.Client) Option {
	return func(c *launchConfig) { c.debug.SetDebuginfod(client) }
}

// WithDebuginfodFromEnv uses the debuginfod servers of the environment
// (DEBUGINFOD_URLS, DEBUGINFOD_CACHE_PATH, DEBUGINFOD_TIMEOUT), read when
// Launch, Attach or New runs.
func WithDebuginfodFromEnv() Option {
	return func(c *launchConfig) { c.debug.SetDebuginfodFromEnv() }
}

// WithDebugContext sets the context that bounds every search for separate
// debug files made by this package's symbol lookups (debuginfod downloads
// in particular) for the Process's or Target's whole life, as
// core.WithDebugContext does for cores: cancelling it (on Ctrl-C, say)
// ends a download under way, and the lookup that needed it fails with the
// context's error. Without it only the debuginfod client's timeout bounds
// them.
func WithDebugContext(ctx context.Context) Option {
	return func(c *launchConfig) { c.debug.Ctx = ctx }
}
