package spill_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lhcnp/lhcnp/collector/spill"
)

func drain(t *testing.T, s *spill.Spill) []string {
	t.Helper()
	var got []string
	for {
		r, ok, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got
		}
		got = append(got, string(r.Payload))
		s.Done(r)
	}
}

func TestAppendNextDone(t *testing.T) {
	dir := t.TempDir()
	s, err := spill.Open(dir, spill.WithSegmentBytes(64), spill.WithFsync(true))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 20 {
		p := fmt.Sprintf("record-%02d", i)
		want = append(want, p)
		if err := s.Append([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Pending() != 20 {
		t.Errorf("Pending = %d, want 20", s.Pending())
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
	if len(segs) < 5 {
		t.Errorf("%d segments of 64 bytes for 20 records of 17 bytes, want at least 5", len(segs))
	}
	if d := cmp.Diff(want, drain(t, s)); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	s.Flush()
	if segs, _ := filepath.Glob(filepath.Join(dir, "seg-*")); len(segs) != 0 || s.Bytes() != 0 || s.Pending() != 0 {
		t.Errorf("after all done: segments %v, %d bytes, %d pending; want none", segs, s.Bytes(), s.Pending())
	}
}

func TestReopenAfterCrash(t *testing.T) {
	dir := t.TempDir()
	s, err := spill.Open(dir, spill.WithSegmentBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := s.Append(fmt.Appendf(nil, "r%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Two records stored and done; the process dies without Close.
	for range 2 {
		r, _, _ := s.Next()
		s.Done(r)
	}
	// A torn record at the tail: the header of a record whose payload never made it.
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
	f, err := os.OpenFile(segs[len(segs)-1], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{100, 0, 0, 0, 1, 2})
	f.Close()

	s2, err := spill.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Done is not persisted: a restart hands out every record of the
	// segment again (the ledger skips those already stored).
	if d := cmp.Diff([]string{"r0", "r1", "r2", "r3", "r4"}, drain(t, s2)); d != "" {
		t.Errorf("records after reopen (-want +got):\n%s", d)
	}
	if err := s2.Append([]byte("after")); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"after"}, drain(t, s2)); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
}

func TestFullAndRequeue(t *testing.T) {
	s, err := spill.Open(t.TempDir(), spill.WithMaxBytes(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(make([]byte, 60)); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(make([]byte, 60)); !errors.Is(err, spill.ErrFull) {
		t.Errorf("Append past the limit: %v, want ErrFull", err)
	}
	r, ok, err := s.Next()
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	s.Requeue(r)
	r2, ok, err := s.Next()
	if !ok || err != nil || len(r2.Payload) != 60 {
		t.Fatalf("Next after Requeue: %d bytes, %v, %v", len(r2.Payload), ok, err)
	}
}

func TestCorruptRecord(t *testing.T) {
	dir := t.TempDir()
	s, _ := spill.Open(dir)
	for i := range 3 {
		s.Append(fmt.Appendf(nil, "record-%d", i))
	}
	s.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
	data, _ := os.ReadFile(segs[0])
	data[len(data)-1] ^= 0xff // the last record's payload
	os.WriteFile(segs[0], data, 0o600)
	s2, err := spill.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"record-0", "record-1"}, drain(t, s2)); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	if s2.Corrupt() != 1 {
		t.Errorf("Corrupt = %d, want 1", s2.Corrupt())
	}
}
