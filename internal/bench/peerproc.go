package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// marks counts the lines written into a fifo and when the bench read each
// one: the compared servers' commands write one line each as they start.
type marks struct {
	path string
	f    *os.File
	mu   sync.Mutex
	at   []time.Time   // read time of each line so far
	more chan struct{} // closed (and replaced) when lines arrive
	done chan struct{} // closed when the reader stopped
}

// openMarks creates the fifo at path, writable by anyone (a step may run
// as another user), and starts reading it. The bench holds it open for
// writing too, so the fifo never reports end of file between writers and
// a writer's open never blocks.
func openMarks(path string) (*marks, error) {
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		return nil, fmt.Errorf("creating fifo %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil { // past the umask
		return nil, fmt.Errorf("creating fifo %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening fifo %s: %w", path, err)
	}
	m := &marks{path: path, f: f, more: make(chan struct{}), done: make(chan struct{})}
	go m.read()
	return m, nil
}

func (m *marks) read() {
	defer close(m.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := m.f.Read(buf)
		if n > 0 {
			now := time.Now()
			m.mu.Lock()
			for range bytes.Count(buf[:n], []byte{'\n'}) {
				m.at = append(m.at, now)
			}
			close(m.more)
			m.more = make(chan struct{})
			m.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// wait returns when the n-th line was read, or fails after timeout.
func (m *marks) wait(ctx context.Context, n int, timeout time.Duration) (time.Time, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		m.mu.Lock()
		got, more := len(m.at), m.more
		if got >= n {
			at := m.at[n-1]
			m.mu.Unlock()
			return at, nil
		}
		m.mu.Unlock()
		select {
		case <-more:
		case <-m.done:
			return time.Time{}, fmt.Errorf("waiting for %d commands: the fifo closed after %d", n, got)
		case <-timer.C:
			return time.Time{}, fmt.Errorf("waiting for %d commands: %d started within %s", n, got, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

func (m *marks) close() {
	_ = m.f.Close()
	<-m.done
}

// procStat is what the bench reads of /proc/<pid>/stat.
type procStat struct {
	ppid int
	cpu  time.Duration // utime + stime + cutime + cstime
}

// readProcStat parses /proc/<pid>/stat: the fields after the command
// name (which may hold spaces and parentheses) are state, ppid, ... with
// utime, stime, cutime and cstime the 14th to 17th fields of the line.
func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat: %d fields", pid, len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
	}
	var ticks int64
	for _, s := range f[11:15] { // utime stime cutime cstime
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return procStat{ppid: ppid, cpu: time.Duration(ticks) * time.Second / clockTicks}, nil
}

// treeCPU is the CPU time of pid and every process below it: each one's
// own time and that of the children it has waited for. Between two
// readings, its difference is the CPU the tree spent, whether the
// processes that spent it still run, ended and were reaped by a process of
// the tree, or started in between.
func treeCPU(pid int) (time.Duration, error) {
	root, err := readProcStat(pid)
	if err != nil {
		return 0, fmt.Errorf("reading the cpu time of %d: %w", pid, err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("listing processes: %w", err)
	}
	stats := map[int]procStat{}
	kids := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		st, err := readProcStat(p)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // ended meanwhile
		}
		if err != nil {
			return 0, err
		}
		stats[p] = st
		kids[st.ppid] = append(kids[st.ppid], p)
	}
	total := root.cpu
	stack := kids[pid]
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		total += stats[p].cpu
		stack = append(stack, kids[p]...)
	}
	return total, nil
}
