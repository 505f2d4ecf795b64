package skillstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/natstest"
)

// TestDirectReadsWhatTheObjectStoreWrote: the direct reader gets the same
// files as the object store's own reader, for an object of many chunks,
// and refuses a missing object, a link, and chunks that were tampered
// with, each with the package's error.
func TestDirectReadsWhatTheObjectStoreWrote(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	obs, err := srv.JS.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: DefaultObjects})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("0123456789abcdef", 40_000) // 640 KB: five chunks of 128 KiB
	digest := putSkill(t, obs, map[string]string{"SKILL.md": "---\nname: big\ndescription: Big.\n---\nBody.\n", "data/big.txt": big})
	info, err := obs.GetInfo(ctx, ObjectName(digest))
	if err != nil || info.Chunks < 2 {
		t.Fatalf("object of %d chunks, %v; want several", info.Chunks, err)
	}
	d, err := NewDirect(srv.Conn, "")
	if err != nil {
		t.Fatal(err)
	}
	files, err := d.Fetch(ctx, digest, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Fetch(ctx, obs, digest, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) {
		t.Fatalf("direct read %d files, object store %d", len(files), len(want))
	}
	for i := range files {
		if files[i].Path != want[i].Path || !bytes.Equal(files[i].Data, want[i].Data) {
			t.Errorf("file %d: %s (%d bytes), want %s (%d bytes)", i, files[i].Path, len(files[i].Data), want[i].Path, len(want[i].Data))
		}
	}
	dir := filepath.Join(t.TempDir(), "big")
	if err := MaterializeFrom(ctx, d, digest, dir, Limits{}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "data", "big.txt")); err != nil || string(got) != big {
		t.Fatalf("materialised big.txt: %d bytes, %v", len(got), err)
	}

	missing := strings.Repeat("ab", 32)
	if _, err := d.Fetch(ctx, missing, Limits{}); !errors.Is(err, ErrObjectMissing) {
		t.Errorf("missing object: %v, want ErrObjectMissing", err)
	}

	// A link named like a skill object.
	linked := strings.Repeat("cd", 32)
	if _, err := obs.AddLink(ctx, ObjectName(linked), info); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Fetch(ctx, linked, Limits{}); !errors.Is(err, ErrBadArchive) || !strings.Contains(err.Error(), "link") {
		t.Errorf("link: %v, want ErrBadArchive naming the link", err)
	}

	// One more chunk on the object's chunk subject, appended by someone
	// with write access: the chunks no longer add up.
	small := putSkill(t, obs, map[string]string{"SKILL.md": "---\nname: small\ndescription: Small.\n---\nBody.\n"})
	sinfo, err := obs.GetInfo(ctx, ObjectName(small))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := srv.Conn.JetStream()
	// Rewrite the metadata to claim two chunks of the same size, then add
	// a forged second chunk: sizes add up wrong.
	if _, err := js.Publish("$O."+DefaultObjects+".C."+sinfo.NUID, []byte("forged")); err != nil {
		t.Fatal(err)
	}
	sinfo.Chunks++
	sinfo.Size += uint64(len("forged"))
	meta, _ := jsonOf(sinfo)
	m := nats.NewMsg("$O." + DefaultObjects + ".M." + base64.URLEncoding.EncodeToString([]byte(ObjectName(small))))
	m.Data = meta
	if _, err := js.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Fetch(ctx, small, Limits{}); !errors.Is(err, ErrBadArchive) || !strings.Contains(err.Error(), "digest") {
		t.Errorf("tampered chunks: %v, want ErrBadArchive saying the digest differs", err)
	}
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }
