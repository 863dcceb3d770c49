// Package spill is the collector's disk queue: records (encoded batches)
// appended to segment files under a directory, read back in order, and a
// segment deleted once every record in it is marked done. A process that
// dies leaves its segments; the next Open reads them again (the ledger in
// the database recognises the batches already stored).
//
// Segment format: an 8-byte magic "LHCNPSP1", then records, each a 4-byte
// little-endian payload length, a 4-byte CRC-32C of the payload, the
// payload. A torn record at the end of the last segment (a crash during
// the write) is cut off at Open; a record whose CRC does not match ends the
// segment's readable part and is counted as corrupt.
//
// Durability: with WithFsync(true) Append returns after fsync of the data
// (and of the directory when a segment is created), so an acknowledged
// record survives a crash of the machine; without it, it survives a crash
// of the process only.
//
// It knows bytes, not batches: it must not depend on rows/ or the database.
package spill

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Magic starts every segment file.
const Magic = "LHCNPSP1"

const headerBytes = 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Errors.
var (
	// ErrFull: the record would take the spill past its byte limit.
	ErrFull = errors.New("spill: full")
	// ErrCorrupt: a record's length or CRC is wrong.
	ErrCorrupt = errors.New("spill: corrupt record")
)

// MaxRecordBytes bounds one record (a corrupt length cannot make a reader
// allocate more).
const MaxRecordBytes = 256 << 20

type options struct {
	maxBytes int64
	segBytes int64
	fsync    bool
	scan     func(payload []byte)
}

// WithScan calls fn with every record found at Open (the batches a
// previous process left), before any is handed out.
func WithScan(fn func(payload []byte)) Option { return func(o *options) { o.scan = fn } }

// Option configures Open.
type Option func(*options)

// WithMaxBytes bounds the bytes on disk (default 1 GiB).
func WithMaxBytes(n int64) Option { return func(o *options) { o.maxBytes = n } }

// WithSegmentBytes sets the size at which a segment is closed (default 16 MiB).
func WithSegmentBytes(n int64) Option { return func(o *options) { o.segBytes = n } }

// WithFsync makes Append durable against machine crashes.
func WithFsync(on bool) Option { return func(o *options) { o.fsync = on } }

type segment struct {
	id      uint64
	path    string
	size    int64 // valid bytes
	records int   // valid records
	read    int   // records handed out by Next
	readOff int64
	done    int
	closed  bool
	rf      *os.File // read handle
}

// Spill is a directory of segments. Safe for concurrent use.
type Spill struct {
	dir string
	o   options
	mu  sync.Mutex
	// segs are the live segments, oldest first; the last is the tail being
	// written unless it is closed.
	segs    []*segment
	w       *os.File
	nextID  uint64
	bytes   int64
	pending int // records appended and not done
	corrupt int
}

// Record is one record handed out by Next.
type Record struct {
	Payload []byte
	seg     *segment
}

// Open opens (creating) the spill in dir and takes the segments a previous
// process left there.
func Open(dir string, opts ...Option) (*Spill, error) {
	o := options{maxBytes: 1 << 30, segBytes: 16 << 20}
	for _, opt := range opts {
		opt(&o)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "seg-*.spill"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	s := &Spill{dir: dir, o: o, nextID: 1}
	for i, name := range names {
		var id uint64
		if _, err := fmt.Sscanf(filepath.Base(name), "seg-%016d.spill", &id); err != nil {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("spill: %w", err)
		}
		valid, n, err := Scan(data, o.scan)
		if err != nil {
			s.corrupt++
			if i == len(names)-1 || errors.Is(err, io.ErrUnexpectedEOF) {
				// A torn tail: cut it so later reads stop cleanly.
				if terr := os.Truncate(name, int64(valid)); terr != nil {
					return nil, fmt.Errorf("spill: %w", terr)
				}
			}
		}
		if n == 0 {
			os.Remove(name)
			continue
		}
		s.segs = append(s.segs, &segment{id: id, path: name, size: int64(valid), records: n, readOff: headerBytes, closed: true})
		s.bytes += int64(valid)
		s.pending += n
		if id >= s.nextID {
			s.nextID = id + 1
		}
	}
	return s, nil
}

// Scan walks the records of a segment's bytes, calling fn (when not nil)
// with each payload. It returns the length of the valid prefix and the
// number of valid records; err is non-nil when bytes past the prefix are
// not a whole valid record (io.ErrUnexpectedEOF for a torn tail,
// ErrCorrupt for a bad length or CRC, or a bad magic).
func Scan(data []byte, fn func(payload []byte)) (valid, records int, err error) {
	if len(data) < headerBytes {
		if strings.HasPrefix(Magic, string(data)) {
			return 0, 0, io.ErrUnexpectedEOF
		}
		return 0, 0, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	if string(data[:headerBytes]) != Magic {
		return 0, 0, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	off := headerBytes
	for off < len(data) {
		payload, n, err := record(data[off:])
		if err != nil {
			return off, records, err
		}
		if fn != nil {
			fn(payload)
		}
		off += n
		records++
	}
	return off, records, nil
}

// record decodes the record at the start of b, returning its payload and
// its length on disk.
func record(b []byte) ([]byte, int, error) {
	if len(b) < 8 {
		return nil, 0, io.ErrUnexpectedEOF
	}
	n := binary.LittleEndian.Uint32(b)
	if n > MaxRecordBytes {
		return nil, 0, fmt.Errorf("%w: length %d", ErrCorrupt, n)
	}
	if len(b)-8 < int(n) {
		return nil, 0, io.ErrUnexpectedEOF
	}
	payload := b[8 : 8+n]
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, fmt.Errorf("%w: crc mismatch", ErrCorrupt)
	}
	return payload, 8 + int(n), nil
}

// Append writes a record. It returns ErrFull when the spill would exceed
// its limit; the record is then not stored.
func (s *Spill) Append(payload []byte) error {
	if len(payload) > MaxRecordBytes {
		return fmt.Errorf("spill: record of %d bytes is past the limit", len(payload))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	need := int64(8 + len(payload))
	if s.bytes+need+headerBytes > s.o.maxBytes {
		return ErrFull
	}
	tail := s.tail()
	if tail == nil || tail.size+need > s.o.segBytes && tail.records > 0 {
		if err := s.rotate(); err != nil {
			return err
		}
		tail = s.tail()
	}
	buf := make([]byte, 8, need)
	binary.LittleEndian.PutUint32(buf, uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[4:], crc32.Checksum(payload, crcTable))
	buf = append(buf, payload...)
	if _, err := s.w.Write(buf); err != nil {
		// The segment may hold a partial record: close it where it was
		// valid and start a new one on the next Append.
		s.w.Truncate(tail.size)
		s.closeTail()
		return fmt.Errorf("spill: %w", err)
	}
	if s.o.fsync {
		if err := s.w.Sync(); err != nil {
			return fmt.Errorf("spill: %w", err)
		}
	}
	tail.size += need
	tail.records++
	s.bytes += need
	s.pending++
	return nil
}

func (s *Spill) tail() *segment {
	if len(s.segs) == 0 || s.segs[len(s.segs)-1].closed {
		return nil
	}
	return s.segs[len(s.segs)-1]
}

func (s *Spill) closeTail() {
	if t := s.tail(); t != nil {
		t.closed = true
		s.w.Close()
		s.w = nil
		s.maybeRemove(t)
	}
}

func (s *Spill) rotate() error {
	s.closeTail()
	id := s.nextID
	s.nextID++
	path := filepath.Join(s.dir, fmt.Sprintf("seg-%016d.spill", id))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	if _, err := f.Write([]byte(Magic)); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("spill: %w", err)
	}
	if s.o.fsync {
		if err := syncDir(s.dir); err != nil {
			f.Close()
			return err
		}
	}
	s.w = f
	s.segs = append(s.segs, &segment{id: id, path: path, size: headerBytes, readOff: headerBytes})
	s.bytes += headerBytes
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	return nil
}

// Next returns the oldest record not yet handed out; ok is false when
// there is none. A corrupt record ends its segment (counted by Corrupt).
func (s *Spill) Next() (rec Record, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sg := range s.segs {
		if sg.read >= sg.records {
			continue
		}
		if sg.rf == nil {
			if sg.rf, err = os.Open(sg.path); err != nil {
				return Record{}, false, fmt.Errorf("spill: %w", err)
			}
		}
		var hdr [8]byte
		if _, err := sg.rf.ReadAt(hdr[:], sg.readOff); err != nil {
			return Record{}, false, s.dropRest(sg, err)
		}
		n := binary.LittleEndian.Uint32(hdr[:])
		if n > MaxRecordBytes || sg.readOff+8+int64(n) > sg.size {
			return Record{}, false, s.dropRest(sg, ErrCorrupt)
		}
		buf := make([]byte, 8+n)
		if _, err := sg.rf.ReadAt(buf, sg.readOff); err != nil {
			return Record{}, false, s.dropRest(sg, err)
		}
		payload, _, err := record(buf)
		if err != nil {
			return Record{}, false, s.dropRest(sg, err)
		}
		sg.readOff += int64(len(buf))
		sg.read++
		return Record{Payload: payload, seg: sg}, true, nil
	}
	return Record{}, false, nil
}

// dropRest gives up on the unread records of a segment.
func (s *Spill) dropRest(sg *segment, cause error) error {
	lost := sg.records - sg.read
	s.corrupt += lost
	s.pending -= lost
	sg.done += lost
	sg.read = sg.records
	s.maybeRemove(sg)
	return fmt.Errorf("%w: %s: %d records lost: %v", ErrCorrupt, filepath.Base(sg.path), lost, cause)
}

// Done marks a record handed out by Next as stored: its segment goes once
// all its records are done and it is closed.
func (s *Spill) Done(r Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.seg.done++
	s.pending--
	s.maybeRemove(r.seg)
}

// Requeue hands a record out again on the next Next (its write failed and
// will be retried). Only the last record handed out may be requeued.
func (s *Spill) Requeue(r Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.seg.read--
	r.seg.readOff -= int64(8 + len(r.Payload))
}

func (s *Spill) maybeRemove(sg *segment) {
	if !sg.closed || sg.done < sg.records {
		return
	}
	if sg.rf != nil {
		sg.rf.Close()
	}
	os.Remove(sg.path)
	s.bytes -= sg.size
	for i, x := range s.segs {
		if x == sg {
			s.segs = append(s.segs[:i], s.segs[i+1:]...)
			break
		}
	}
}

// Flush closes the tail segment when all of the spill has been read and
// done, so the directory empties once the backlog is stored.
func (s *Spill) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tail(); t != nil && t.done == t.records {
		s.closeTail()
	}
}

// Pending is the number of records appended and not yet done.
func (s *Spill) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending
}

// Bytes is the size of the spill on disk.
func (s *Spill) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Corrupt is the number of records lost to corruption.
func (s *Spill) Corrupt() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.corrupt
}

// Close closes the files; the segments stay for the next Open.
func (s *Spill) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sg := range s.segs {
		if sg.rf != nil {
			sg.rf.Close()
			sg.rf = nil
		}
	}
	if s.w != nil {
		err := s.w.Close()
		s.w = nil
		return err
	}
	return nil
}
