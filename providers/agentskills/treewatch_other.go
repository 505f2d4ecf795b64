//go:build !linux

package agentskills

import (
	"errors"
	"io/fs"
)

// Without inotify, folder digests are always walked (see loadcache.go).

type treeWatch struct{}

type watchedTree struct{ stale bool }

func newTreeWatch() (*treeWatch, error) { return nil, errors.ErrUnsupported }

func (*treeWatch) held() int                          { return 0 }
func (*treeWatch) add([]string) (*watchedTree, error) { return nil, errors.ErrUnsupported }
func (*treeWatch) release(*watchedTree)               {}
func (*treeWatch) drain()                             {}
func (*treeWatch) close()                             {}
func inodeOf(fs.FileInfo) [2]uint64                   { return [2]uint64{} }
func oneDevice(fs.FileInfo, []File) bool              { return false }
func localFS(string) bool                             { return false }
