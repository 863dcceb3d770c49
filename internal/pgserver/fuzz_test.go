package pgserver

import "testing"

func TestParsePostmasterPID(t *testing.T) {
	for _, tt := range []struct {
		desc      string
		in        string
		pid, port int
		ok        bool
	}{
		{"postgres 15", "4242\n/tmp/pg\n1732439000\n5433\n/tmp/pg\n127.0.0.1\n  1234   5678\nready   \n", 4242, 5433, true},
		{"pid only", "17\n", 17, 0, true},
		{"bad port", "17\na\nb\nport\n", 17, 0, true},
		{"empty", "", 0, 0, false},
		{"negative", "-3\n", 0, 0, false},
		{"garbage", "\x00\xff\n", 0, 0, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			pid, port, ok := parsePostmasterPID([]byte(tt.in))
			if pid != tt.pid || port != tt.port || ok != tt.ok {
				t.Errorf("parsePostmasterPID(%q) = %d, %d, %v; want %d, %d, %v", tt.in, pid, port, ok, tt.pid, tt.port, tt.ok)
			}
		})
	}
}

// FuzzParsePostmasterPID: any file content gives a positive pid and a valid
// port, or not ok; never a panic.
func FuzzParsePostmasterPID(f *testing.F) {
	f.Add([]byte("4242\n/tmp/pg\n1732439000\n5433\n/tmp/pg\n127.0.0.1\n"))
	f.Add([]byte(""))
	f.Add([]byte("1\n\n\n99999\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pid, port, ok := parsePostmasterPID(b)
		if ok && pid <= 0 {
			t.Errorf("ok with pid %d", pid)
		}
		if !ok && (pid != 0 || port != 0) {
			t.Errorf("not ok but pid %d port %d", pid, port)
		}
		if port < 0 || port > 65535 {
			t.Errorf("port %d", port)
		}
	})
}
