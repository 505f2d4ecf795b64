package store

import (
	"fmt"
	"io"

	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// pack archives files (as agentskills.Files lists them) into a skill
// object (see skillstore.Archive) and returns it and the digest of the
// files, computed from the bytes archived. Each file is read only while
// it is the one listed.
func pack(files []agentskills.File) ([]byte, string, error) {
	a := skillstore.NewArchive()
	for _, f := range files {
		data, err := readListed(f)
		if err != nil {
			return nil, "", err
		}
		if err := a.Add(f.Path, data); err != nil {
			return nil, "", err
		}
	}
	return a.Close()
}

func readListed(f agentskills.File) ([]byte, error) {
	fh, err := agentskills.Open(f)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, f.Size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != f.Size {
		return nil, fmt.Errorf("%s changed while it was read", f.Source)
	}
	return data, nil
}
