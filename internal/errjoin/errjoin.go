// Package errjoin joins errors as errors.Join does, but into one line:
// errors.Join separates the messages by newlines, which break log lines
// and the one-line messages a debugger shows.
package errjoin

import "strings"

// Join returns an error that wraps the non-nil errs (errors.Is and
// errors.As see each of them) and whose message is theirs separated by
// "; ", with any newline inside them replaced the same way. It returns nil
// if every err is nil.
func Join(errs ...error) error {
	var l list
	for _, err := range errs {
		if err != nil {
			l = append(l, err)
		}
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

type list []error

func (l list) Error() string {
	var b strings.Builder
	for i, err := range l {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return b.String()
}

func (l list) Unwrap() []error { return l }
