package localcluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// process is a child process started by the cluster, with its output in a log file.
type process struct {
	name    string
	path    string
	logPath string
	cmd     *exec.Cmd

	done     chan struct{} // closed when the process has exited
	exitErr  error         // valid after done
	stopping atomic.Bool   // set before a deliberate stop, so the exit is not reported as a crash
}

// startProcess starts path with args, stdout and stderr appended to logPath. The child gets its own process
// group so that a Ctrl-C on the terminal reaches only drover-local, which then stops the children in order.
func startProcess(name, path string, args, env []string, logPath string) (*process, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	logFile, err := os.OpenFile(filepath.Clean(logPath), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the log of %s: %w", name, err)
	}
	fmt.Fprintf(logFile, "# %s %s\n", path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, path: path, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.exitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to timeout, then sends SIGKILL and waits for the exit.
func (p *process) stop(timeout time.Duration) error {
	p.stopping.Store(true)
	if p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
	}
	if err := p.killAndWait(); err != nil {
		return err
	}
	return fmt.Errorf("%s (pid %d) did not stop within %s of SIGTERM and was killed", p.name, p.pid(), timeout)
}

// killAndWait sends SIGKILL and waits for the exit.
func (p *process) killAndWait() error {
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, p.pid())
	}
}

// crashError describes an unexpected exit, with the end of the log.
func (p *process) crashError() error {
	return fmt.Errorf("%s (pid %d) exited unexpectedly: %w (log: %s)\n%s",
		p.name, p.pid(), p.exitErr, p.logPath, indent(TailFile(p.logPath, 20)))
}

// ProcessRecord is one entry of pids.json.
type ProcessRecord struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// Path is the executable; a PID whose command line does not start with it is not ours any more.
	Path string `json:"path"`
}

// pidFile is the content of <Dir>/pids.json.
type pidFile struct {
	// Owner is the process that started the cluster (drover-local, or a test binary).
	Owner int `json:"owner"`
	// OwnerPath is the owner's argv[0], to tell it from a later process that got the same PID.
	OwnerPath string          `json:"ownerPath"`
	Processes []ProcessRecord `json:"processes"`
}

const pidFileName = "pids.json"

// pidRecorder keeps <Dir>/pids.json up to date as processes start.
type pidRecorder struct {
	mu   sync.Mutex
	path string
	file pidFile
}

func (r *pidRecorder) add(rec ProcessRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.file.Processes = append(r.file.Processes, rec)
	return writeJSON(r.path, r.file)
}

// drop forgets the process pid (one that has exited); a failed write leaves a record KillRecorded skips.
func (r *pidRecorder) drop(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.file.Processes = slices.DeleteFunc(r.file.Processes, func(p ProcessRecord) bool { return p.PID == pid })
	_ = writeJSON(r.path, r.file)
}

func (r *pidRecorder) remove() { _ = os.Remove(r.path) }

// ReadPIDs returns the owner and the processes recorded in dir (a cluster's Options.Dir). A missing file
// is not an error: it returns owner 0 and no processes.
func ReadPIDs(dir string) (owner int, procs []ProcessRecord, err error) {
	data, err := os.ReadFile(filepath.Clean(filepath.Join(dir, pidFileName)))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	var f pidFile
	if err := json.Unmarshal(data, &f); err != nil {
		return 0, nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, pidFileName), err)
	}
	return f.Owner, f.Processes, nil
}

func readOwner(dir string) (int, string, error) {
	data, err := os.ReadFile(filepath.Clean(filepath.Join(dir, pidFileName)))
	if errors.Is(err, os.ErrNotExist) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	var f pidFile
	if err := json.Unmarshal(data, &f); err != nil {
		return 0, "", nil //nolint:nilerr // an unreadable record has no live owner
	}
	return f.Owner, f.OwnerPath, nil
}

// KillRecorded stops every process recorded in dir that still runs the recorded executable: SIGTERM, then
// SIGKILL after timeout. It returns the processes it stopped and removes the record. It is the fallback of
// drover-local down and how Start cleans up after an owner that died without stopping its cluster.
func KillRecorded(dir string, timeout time.Duration) ([]ProcessRecord, error) {
	_, procs, err := ReadPIDs(dir)
	if err != nil {
		return nil, err
	}
	var alive []ProcessRecord
	for _, p := range procs {
		if Running(p.PID, p.Path) {
			alive = append(alive, p)
		}
	}
	var errs []error
	// Stop in reverse start order: the manager and kwok before the API server, etcd last.
	for i := len(alive) - 1; i >= 0; i-- {
		if err := terminate(alive[i].PID, alive[i].Path, timeout); err != nil {
			errs = append(errs, fmt.Errorf("%s (pid %d): %w", alive[i].Name, alive[i].PID, err))
		}
	}
	if len(errs) == 0 {
		_ = os.Remove(filepath.Join(dir, pidFileName))
	}
	return alive, errors.Join(errs...)
}

// terminate sends SIGTERM to pid, then SIGKILL if it still runs path after timeout.
func terminate(pid int, path string, timeout time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if waitGone(pid, path, timeout) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if waitGone(pid, path, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("still running after SIGKILL")
}

func waitGone(pid int, path string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if !Running(pid, path) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Running reports whether pid is a live (not zombie) process whose command line starts with path. An
// empty path matches any command.
func Running(pid int, path string) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may itself contain spaces.
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return false
	}
	if path == "" {
		return true
	}
	arg0, ok := cmdlineArg0(pid)
	return ok && filepath.Clean(arg0) == filepath.Clean(path)
}

func cmdlineArg0(pid int) (string, bool) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return "", false
	}
	arg0, _, _ := bytes.Cut(cmdline, []byte{0})
	return string(arg0), true
}

// childrenRunning returns the PIDs of the live children of this process whose command line starts with
// path. envtest starts etcd and kube-apiserver without telling their PIDs; this finds them.
func childrenRunning(path string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(self) {
			continue
		}
		if Running(pid, path) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freePorts returns n ports free on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

// TailFile returns the last n lines of the file at path (or a note that it cannot be read).
func TailFile(path string, n int) string {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer func() { _ = f.Close() }()
	const maxRead = 256 << 10
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	off := max(info.Size()-maxRead, 0)
	buf := make([]byte, info.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// writeFileAtomic writes data to a temporary file next to path, readable by the owner only, and renames it over
// path.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
