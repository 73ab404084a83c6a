package errjoin

import (
	"errors"
	"io"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestJoin(t *testing.T) {
	assert.NoError(t, Join())
	assert.NoError(t, Join(nil, nil))
	multi := errors.Join(errors.New("a"), errors.New("b"))
	err := Join(io.EOF, nil, fs.ErrNotExist, multi)
	assert.Equal(t, "EOF; file does not exist; a; b", err.Error())
	assert.ErrorIs(t, err, io.EOF)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.NotErrorIs(t, err, fs.ErrPermission)
}
