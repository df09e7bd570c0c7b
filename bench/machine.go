package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machine describes the host: the numbers mean little without it.
func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), LoadBefore: loadavg()}
	m.Quiet = isQuiet(m.LoadBefore)
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				m.MemoryBytes = bytesFig(kb << 10)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := run("findmnt", "-n", "-o", "SOURCE,FSTYPE", "--target", "/var/tmp"); err == nil {
		m.Disk = strings.TrimSpace(out)
	}
	return m
}

// quietLoad is the highest load average of a run called quiet (issue 29):
// above it other work shares the cores the figures are about.
const quietLoad = 1.5

// isQuiet reports whether every load average of a loadavg string is at
// most quietLoad.
func isQuiet(load string) bool {
	f := strings.Fields(load)
	for _, v := range f {
		if x, err := strconv.ParseFloat(v, 64); err != nil || x > quietLoad {
			return false
		}
	}
	return len(f) > 0
}

// loadavg is /proc/loadavg's three load averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
