// Package apimap maps every OMPD function of the specification texts
// ompd-go was started from to its Go name, in one place: it writes the
// table of docs/ompd-api.md (go generate ./internal/apimap), and its test
// fails when a function of the texts is neither mapped nor listed as not
// applicable, or when the table is stale.
//
// The functions are those of functions.txt, extracted from the texts. The
// Go names come from the doc comments of the exported names of package
// ompd and package target: a doc comment that names an OMPD function in
// parentheses, before any semicolon there, maps it to that Go name:
// "Level returns the region's nesting level (ompd_get_level; omp_get_level
// in the region)" maps ompd_get_level to Parallel.Level. So the mapping
// stays beside the code that implements it, and shows in go doc. The
// functions that have no Go counterpart are listed in NotApplicable, each
// with why.
package apimap

import (
	"bufio"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

//go:generate go run ./gen

// Function is one OMPD function of the texts.
type Function struct {
	// Name is its C name ("ompd_get_thread_num").
	Name string
	// Kind is "function" (of the OMPD library), "callback" (a function
	// the debugger gives the library) or "variable" (of the runtime).
	Kind string
	// Texts are the keys of the texts that name it (see functions.txt).
	Texts []string
}

//go:embed functions.txt
var functionsTxt []byte

// Functions returns the functions of functions.txt, in its order.
func Functions() ([]Function, error) {
	var out []Function
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(functionsTxt))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[0], "ompd_") {
			return nil, fmt.Errorf("functions.txt:%d: want NAME KIND TEXT..., got %q", n, line)
		}
		switch f[1] {
		case "function", "callback", "variable":
		default:
			return nil, fmt.Errorf("functions.txt:%d: kind %q", n, f[1])
		}
		if seen[f[0]] {
			return nil, fmt.Errorf("functions.txt:%d: %s twice", n, f[0])
		}
		seen[f[0]] = true
		out = append(out, Function{Name: f[0], Kind: f[1], Texts: f[2:]})
	}
	return out, sc.Err()
}

// NotApplicable are the functions of the texts that have no Go
// counterpart, with why.
var NotApplicable = map[string]string{
	"ompd_initialize":                   "a Go library keeps no global state: there is nothing to initialize, and the debugger's callbacks are the target.Target given to Open",
	"ompd_finalize":                     "a Go library keeps no global state: there is nothing to finalize (AddressSpace.Close ends one process's session)",
	"ompd_release_thread_handle":        "handles are small comparable values: nothing to release",
	"ompd_release_parallel_handle":      "handles are small comparable values: nothing to release",
	"ompd_rel_parallel_handle":          "handles are small comparable values: nothing to release",
	"ompd_release_task_handle":          "handles are small comparable values: nothing to release",
	"ompd_release_display_control_vars": "the variables are a Go slice: the garbage collector frees it",
	"ompd_get_error_string":             "errors are Go error values: their Error method gives the string, and errors.Is with the sentinels (ErrUnavailable, ...) replaces the return code",
	"ompd_dmemory_alloc_fn_t":           "the library allocates Go memory; the debugger is not asked",
	"ompd_dmemory_free_fn_t":            "the library allocates Go memory; the debugger is not asked",
	"ompd_error_string_fn_t":            "errors are Go error values, which carry their own strings",
	"ompd_print_string_fn_t":            "the library prints nothing: it returns values and errors to the caller",
}

// Packages are the directories, relative to the module root, whose
// exported names may map OMPD functions, with the package name the table
// gives them.
var Packages = []struct{ Dir, Name string }{{".", "ompd"}, {"target", "target"}}

// mention finds the OMPD names a doc comment maps: inside a parenthesized
// group, before any semicolon in it.
var (
	group = regexp.MustCompile(`\(([^()]*)\)`)
	ident = regexp.MustCompile(`\bompd_[A-Za-z0-9_]*[A-Za-z0-9]\b`)
)

// Mentions returns the OMPD names doc maps.
func Mentions(doc string) []string {
	var out []string
	for _, g := range group.FindAllStringSubmatch(strings.Join(strings.Fields(doc), " "), -1) {
		text, _, _ := strings.Cut(g[1], ";")
		for _, id := range ident.FindAllString(text, -1) {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// Scan reads the Go files (not the tests) of Packages under root and
// returns, for each OMPD name their exported names' doc comments map, the
// Go names ("ompd.Thread.Num", "target.Target.ReadMemory"), sorted.
func Scan(root string) (map[string][]string, error) {
	out := map[string][]string{}
	add := func(doc *ast.CommentGroup, name string) {
		if doc == nil {
			return
		}
		for _, m := range Mentions(doc.Text()) {
			if !slices.Contains(out[m], name) {
				out[m] = append(out[m], name)
			}
		}
	}
	for _, p := range Packages {
		fset := token.NewFileSet()
		files, err := filepath.Glob(filepath.Join(root, p.Dir, "*.go"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("apimap: no Go files in %s", filepath.Join(root, p.Dir))
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					name := d.Name.Name
					if d.Recv != nil && len(d.Recv.List) == 1 {
						recv := recvName(d.Recv.List[0].Type)
						if !ast.IsExported(recv) {
							continue
						}
						name = recv + "." + name
					}
					add(d.Doc, p.Name+"."+name)
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							doc := s.Doc
							if doc == nil && len(d.Specs) == 1 {
								doc = d.Doc
							}
							add(doc, p.Name+"."+s.Name.Name)
							if it, ok := s.Type.(*ast.InterfaceType); ok {
								for _, m := range it.Methods.List {
									for _, n := range m.Names {
										if n.IsExported() {
											add(m.Doc, p.Name+"."+s.Name.Name+"."+n.Name)
										}
									}
								}
							}
						case *ast.ValueSpec:
							doc := s.Doc
							if doc == nil && len(d.Specs) == 1 {
								doc = d.Doc
							}
							for _, n := range s.Names {
								if n.IsExported() {
									add(doc, p.Name+"."+n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out, nil
}

// recvName is the type name of a method's receiver.
func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// Row is one function of the table.
type Row struct {
	Function
	// Go are its Go names; NotApplicable says why it has none.
	Go            []string
	NotApplicable string
}

// Table maps every function of the texts, or fails naming each that is
// neither mapped nor listed as not applicable, each listed as not
// applicable that is mapped all the same, and each listed that the texts
// do not name.
func Table(root string) ([]Row, error) {
	fns, err := Functions()
	if err != nil {
		return nil, err
	}
	goNames, err := Scan(root)
	if err != nil {
		return nil, err
	}
	var errs []error
	var rows []Row
	known := map[string]bool{}
	for _, f := range fns {
		known[f.Name] = true
		r := Row{Function: f, Go: goNames[f.Name], NotApplicable: NotApplicable[f.Name]}
		switch {
		case len(r.Go) == 0 && r.NotApplicable == "":
			errs = append(errs, fmt.Errorf("%s (%s, named by %s): no exported name of package %s says it is this function (name it in parentheses in a doc comment), and it is not in apimap.NotApplicable", f.Name, f.Kind, strings.Join(f.Texts, ", "), packageList()))
		case len(r.Go) > 0 && r.NotApplicable != "":
			errs = append(errs, fmt.Errorf("%s is mapped (%s) and listed as not applicable", f.Name, strings.Join(r.Go, ", ")))
		}
		rows = append(rows, r)
	}
	for n := range NotApplicable {
		if !known[n] {
			errs = append(errs, fmt.Errorf("apimap.NotApplicable lists %s, which functions.txt does not", n))
		}
	}
	return rows, errors.Join(errs...)
}

func packageList() string {
	var s []string
	for _, p := range Packages {
		s = append(s, p.Name)
	}
	return strings.Join(s, " or ")
}

// Markdown writes docs/ompd-api.md from the table.
func Markdown(rows []Row) []byte {
	var b bytes.Buffer
	b.WriteString(`# OMPD in Go

Every function of OMPD that the specification texts this project was
started from name (the 2014 proposal, later drafts of OMPD's chapter of
the OpenMP specification, OpenMP 5.1), and its Go name: generated by
` + "`go generate ./internal/apimap`" + ` from the doc comments of packages
` + "`ompd`" + ` and ` + "`target`" + ` (a doc comment that names an OMPD
function in parentheses is its Go counterpart) and from
` + "`internal/apimap/functions.txt`" + `, which lists the functions and the
texts that name them. Its test fails when a function is neither mapped nor
listed as not applicable. The texts span 2014 to 2020, so names drift
(` + "`get_top_parallel_region`" + ` became ` + "`get_curr_parallel_handle`" + `):
every name is here, old and new.

`)
	for _, kind := range []struct{ kind, title, intro string }{
		{"function", "Functions of the OMPD library", "What a debugger calls."},
		{"callback", "Callbacks the debugger gives the library", "In Go, the debugger gives the library a `target.Target`: its methods are the callbacks."},
		{"variable", "Variables of the runtime", ""},
	} {
		fmt.Fprintf(&b, "## %s\n\n", kind.title)
		if kind.intro != "" {
			b.WriteString(kind.intro + "\n\n")
		}
		b.WriteString("| OMPD | Go | named by |\n| --- | --- | --- |\n")
		for _, r := range rows {
			if r.Kind != kind.kind {
				continue
			}
			goText := "not applicable: " + r.NotApplicable
			if len(r.Go) > 0 {
				var names []string
				for _, n := range r.Go {
					names = append(names, "`"+n+"`")
				}
				goText = strings.Join(names, ", ")
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.Name, goText, strings.Join(r.Texts, ", "))
		}
		b.WriteString("\n")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// Doc is the path of the table in the module.
const Doc = "docs/ompd-api.md"

// Generate writes the table under root, or fails as Table does.
func Generate(root string) error {
	rows, err := Table(root)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, Doc), append(Markdown(rows), '\n'), 0o644)
}
