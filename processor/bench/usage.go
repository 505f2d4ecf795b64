package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Usage is a process's resource use at one moment.
type Usage struct {
	CPU time.Duration // user + system time so far
	RSS int64         // resident set now, bytes (0: unknown)
	HWM int64         // peak resident set, bytes (0: unknown)
}

// SelfUsage measures this process: CPU from getrusage, memory from
// /proc/self/status (Linux only).
func SelfUsage() Usage {
	u := Usage{CPU: selfCPU()}
	u.RSS, u.HWM = procMemory("self")
	return u
}

// PIDUsage measures another process from /proc/<pid>/stat and status
// (Linux only; ok is false elsewhere).
func PIDUsage(pid int) (Usage, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, false
	}
	// The command name (field 2) is parenthesised and may hold spaces:
	// fields are counted after its closing parenthesis.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Usage{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return Usage{}, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return Usage{}, false
	}
	const ticks = 100 // USER_HZ: 100 on every Linux Go supports
	u := Usage{CPU: time.Duration(utime+stime) * time.Second / ticks}
	u.RSS, u.HWM = procMemory(strconv.Itoa(pid))
	return u, true
}

// procMemory reads VmRSS and VmHWM of /proc/<who>/status, in bytes.
func procMemory(who string) (rss, hwm int64) {
	f, err := os.Open("/proc/" + who + "/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &rss
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &hwm
		default:
			continue
		}
		fields := strings.Fields(line)
		if len(fields) >= 2 {
			if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				*dst = kb << 10
			}
		}
	}
	return rss, hwm
}

// LoadAverage returns /proc/loadavg's first three fields, or "".
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// MemTotal returns MemTotal from /proc/meminfo in bytes, or 0.
func MemTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
