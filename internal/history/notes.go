package history

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultRef is the notes ref the history lives in.
const DefaultRef = "refs/notes/hotbudget"

// Notes is a history stored as git notes: the record of commit C is the
// note of C under Ref, one line of JSON (git notes --ref=hotbudget show C
// prints it). Notes follow their commit through clones that fetch the
// ref, hold no file in any branch, and two records of different commits
// never conflict when notes refs are merged.
type Notes struct {
	// Dir is a directory of the repository.
	Dir string
	// Ref is the notes ref (DefaultRef when empty).
	Ref string
}

func (n Notes) ref() string {
	if n.Ref == "" {
		return DefaultRef
	}
	return n.Ref
}

// maxGitOutput bounds what git prints for a listing (rev-list, notes
// list): about 3 million commits.
const maxGitOutput = 128 << 20

// git runs git in n.Dir with stdin and returns its stdout, refused beyond
// maxGitOutput bytes.
func (n Notes) git(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = n.Dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	stdout := &limitBuffer{max: maxGitOutput, cancel: cancel}
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		if stdout.over {
			return nil, fmt.Errorf("git %s: more than %d MiB of output", strings.Join(args, " "), maxGitOutput>>20)
		}
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// limitBuffer is a bytes.Buffer that refuses to grow beyond max bytes,
// cancelling the command writing to it.
type limitBuffer struct {
	bytes.Buffer
	max    int
	over   bool
	cancel func()
}

func (b *limitBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.over = true
		if b.cancel != nil {
			b.cancel()
		}
		return 0, errors.New("output too large")
	}
	return b.Buffer.Write(p)
}

// Commit resolves a revision to its full hash and committer date (RFC 3339).
func (n Notes) Commit(ctx context.Context, rev string) (hash, date string, err error) {
	out, err := n.git(ctx, nil, "log", "-1", "--format=%H %cI", "--end-of-options", rev+"^{commit}", "--")
	if err != nil {
		return "", "", fmt.Errorf("revision %q: %w", rev, err)
	}
	hash, date, _ = strings.Cut(strings.TrimSpace(string(out)), " ")
	return hash, date, nil
}

// identity returns the -c options that give git notes a committer when
// the repository and the environment have none (a CI checkout).
func (n Notes) identity(ctx context.Context) []string {
	if _, err := n.git(ctx, nil, "var", "GIT_COMMITTER_IDENT"); err == nil {
		return nil
	}
	return []string{"-c", "user.name=hotbudget", "-c", "user.email=hotbudget@localhost"}
}

// Put stores r as the note of r.Commit, replacing any, after checking it
// as a note is checked when read (Validate; a record of more than
// MaxNoteBytes is refused). The note is the blob as written: git notes
// add -C takes it without cleaning it up.
func (n Notes) Put(ctx context.Context, r *Record) error {
	if err := r.Validate(time.Now()); err != nil {
		return fmt.Errorf("the record of %.12s: %w", r.Commit, err)
	}
	data, err := r.Marshal()
	if err != nil {
		return err
	}
	if len(data) > MaxNoteBytes {
		return fmt.Errorf("the record of %.12s: %d bytes, beyond the %d MiB a note may hold: keep fewer functions or runs (history append --max-functions, --keep-runs)", r.Commit, len(data), MaxNoteBytes>>20)
	}
	blob, err := n.git(ctx, data, "hash-object", "-w", "--stdin")
	if err != nil {
		return err
	}
	args := append(n.identity(ctx), "notes", "--ref", n.ref(), "add", "-f", "-C", strings.TrimSpace(string(blob)), r.Commit)
	_, err = n.git(ctx, nil, args...)
	return err
}

// Get returns the record of commit (a full hash), nil when it has none.
// A note beyond MaxNoteBytes, or whose record fails Validate or is of
// another commit, is an error naming the commit.
func (n Notes) Get(ctx context.Context, commit string) (*Record, error) {
	notes, err := n.list(ctx)
	if err != nil {
		return nil, err
	}
	blob, ok := notes[commit]
	if !ok {
		return nil, nil
	}
	var r *Record
	err = n.cat(ctx, []string{blob}, []string{commit}, func(_ int, rec *Record) error {
		r = rec
		return nil
	})
	return r, err
}

// Load returns the records of the first-parent history of rev (the main
// branch's commits, not those of the branches merged into it), oldest
// first, and the hashes of that history, newest first. Commits without
// a record are skipped. Each note is checked as Get checks it; notes of
// more than MaxHistoryBytes in all, or records of more than
// MaxHistoryEntries benchmarks and functions in all, are refused. The
// records are what the series read: each benchmark's runs (TimeRuns) and
// counts (Counts), which record --base-from-history reads of one record
// (Get), are dropped once checked.
func (n Notes) Load(ctx context.Context, rev string) ([]*Record, []string, error) {
	return n.load(ctx, rev, MaxHistoryBytes, MaxHistoryEntries)
}

// load is Load within maxBytes of notes and maxEntries benchmarks and
// functions.
func (n Notes) load(ctx context.Context, rev string, maxBytes int64, maxEntries int) ([]*Record, []string, error) {
	blobs, which, commits, err := n.history(ctx, rev)
	if err != nil {
		return nil, nil, err
	}
	recs := make([]*Record, 0, len(blobs))
	entries := 0
	err = n.catLimit(ctx, blobs, which, maxBytes, func(i int, r *Record) error {
		for k := range r.Benchmarks {
			b := &r.Benchmarks[k]
			b.TimeRuns, b.Counts = nil, nil
			entries += 1 + len(b.Functions)
		}
		if entries > maxEntries {
			return fmt.Errorf("the note of %s under %s: the records read hold more than %d benchmarks and functions: refused (history prune --keep-functions makes old records smaller)", which[i], n.ref(), maxEntries)
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return recs, commits, nil
}

// history lists the notes of the first-parent history of rev: their
// blobs and commits, oldest first, and the history's commits, newest
// first.
func (n Notes) history(ctx context.Context, rev string) (blobs, which, commits []string, err error) {
	out, err := n.git(ctx, nil, "rev-list", "--first-parent", "--end-of-options", rev+"^{commit}", "--")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("revision %q: %w", rev, err)
	}
	commits = strings.Fields(string(out))
	notes, err := n.list(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	for i := len(commits) - 1; i >= 0; i-- {
		if b, ok := notes[commits[i]]; ok {
			blobs = append(blobs, b)
			which = append(which, commits[i])
		}
	}
	return blobs, which, commits, nil
}

// list returns the notes under the ref: the note's blob by commit.
func (n Notes) list(ctx context.Context) (map[string]string, error) {
	if _, err := n.git(ctx, nil, "rev-parse", "--verify", "--quiet", n.ref()); err != nil {
		return map[string]string{}, nil // no history yet
	}
	out, err := n.git(ctx, nil, "notes", "--ref", n.ref(), "list")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for line := range strings.Lines(string(out)) {
		blob, commit, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok {
			m[commit] = blob
		}
	}
	return m, nil
}

// cat reads the notes blobs of the commits which with one git cat-file
// --batch, one at a time: each is refused beyond MaxNoteBytes before it
// is read, and all of them beyond MaxHistoryBytes; each is decoded,
// checked (Validate) and handed to fn in turn.
func (n Notes) cat(ctx context.Context, blobs, which []string, fn func(i int, r *Record) error) error {
	return n.catLimit(ctx, blobs, which, MaxHistoryBytes, fn)
}

func (n Notes) catLimit(ctx context.Context, blobs, which []string, total int64, fn func(i int, r *Record) error) (err error) {
	if len(blobs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "cat-file", "--batch")
	cmd.Dir = n.Dir
	cmd.Stdin = strings.NewReader(strings.Join(blobs, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	defer func() {
		cancel()
		_ = pipe.Close()
		if werr := cmd.Wait(); err == nil && werr != nil && ctx.Err() == nil {
			err = fmt.Errorf("git cat-file: %v: %s", werr, strings.TrimSpace(stderr.String()))
		}
	}()
	rd := bufio.NewReaderSize(pipe, 4096)
	now := time.Now()
	var read int64
	for i := range blobs {
		note := fmt.Sprintf("the note of %s under %s", which[i], n.ref())
		header, err := rd.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("%s: git cat-file: %w", note, err)
		}
		f := strings.Fields(string(header))
		if len(f) != 3 || f[1] != "blob" {
			return fmt.Errorf("%s: git cat-file: %q for %s", note, strings.TrimSpace(string(header)), blobs[i])
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("%s: git cat-file: %q", note, strings.TrimSpace(string(header)))
		}
		if size > MaxNoteBytes {
			return fmt.Errorf("%s: %d bytes, beyond the %d MiB a note may hold: refused unread", note, size, MaxNoteBytes>>20)
		}
		if read += size; read > total {
			return fmt.Errorf("%s: the notes read hold more than %d MiB: refused (history prune --keep-functions, --keep-runs makes old records smaller)", note, total>>20)
		}
		data := make([]byte, size+1) // and the newline after it
		if _, err := io.ReadFull(rd, data); err != nil {
			return fmt.Errorf("%s: git cat-file: %w", note, err)
		}
		r, err := Unmarshal(data[:size])
		if err == nil {
			err = r.Validate(now)
		}
		if err != nil {
			return fmt.Errorf("%s: refused: %w", note, err)
		}
		if r.Commit != which[i] {
			return fmt.Errorf("%s holds the record of %s", note, r.Commit)
		}
		if err := fn(i, r); err != nil {
			return err
		}
	}
	return nil
}

// Retention is the prune rule: how long records keep their functions.
type Retention struct {
	// KeepFunctions is how many of the newest records of the first-parent
	// history keep their per-function detail; older records keep their
	// benchmarks' values only, forever. Negative: every record keeps them.
	KeepFunctions int
	// KeepRuns is how many of the newest records keep their runs
	// (Benchmark.TimeRuns, about 30 KB of JSON a benchmark), at most
	// KeepFunctions; 0: as many as KeepFunctions. A record's runs serve
	// record --base-from-history while the record is recent.
	KeepRuns int
}

// DefaultRetention keeps functions for the newest 100 records, runs for
// the newest 10.
var DefaultRetention = Retention{KeepFunctions: 100, KeepRuns: 10}

// Prune applies rule to the first-parent history of rev: the records
// beyond the newest rule.KeepFunctions lose their functions, those beyond
// the newest rule.KeepRuns their runs. It returns the commits whose
// records it rewrote.
func (n Notes) Prune(ctx context.Context, rev string, rule Retention) ([]string, error) {
	if rule.KeepFunctions < 0 && rule.KeepRuns <= 0 {
		return nil, nil
	}
	// One note at a time: the records rewritten lose what made them
	// large, and a history too large to show can be pruned.
	blobs, which, _, err := n.history(ctx, rev)
	if err != nil {
		return nil, err
	}
	var changed []*Record
	err = n.catLimit(ctx, blobs, which, math.MaxInt64, func(i int, r *Record) error {
		newer := len(blobs) - 1 - i // records after it
		switch {
		case rule.KeepFunctions >= 0 && newer >= rule.KeepFunctions:
			if r.Prune() {
				changed = append(changed, r)
			}
		case rule.KeepRuns > 0 && newer >= rule.KeepRuns:
			if r.PruneRuns() {
				changed = append(changed, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var pruned []string
	for i := len(changed) - 1; i >= 0; i-- {
		r := changed[i]
		if err := n.Put(ctx, r); err != nil {
			return pruned, err
		}
		pruned = append(pruned, r.Commit)
	}
	slices.Reverse(pruned)
	return pruned, nil
}

// Squash replaces the history of the notes ref by one commit of its
// current notes, so that the versions pruned or replaced are no longer
// reachable (git gc then frees them). Pushing the ref afterwards needs a
// force (+refs/notes/hotbudget).
func (n Notes) Squash(ctx context.Context) error {
	old, err := n.git(ctx, nil, "rev-parse", "--verify", "--quiet", n.ref())
	if err != nil {
		return errors.New("no history to squash: " + n.ref() + " does not exist")
	}
	tree, err := n.git(ctx, nil, "rev-parse", n.ref()+"^{tree}")
	if err != nil {
		return err
	}
	args := append(n.identity(ctx), "commit-tree", strings.TrimSpace(string(tree)), "-m", "hotbudget history: squashed")
	c, err := n.git(ctx, nil, args...)
	if err != nil {
		return err
	}
	_, err = n.git(ctx, nil, "update-ref", "-m", "hotbudget history squash", n.ref(), strings.TrimSpace(string(c)), strings.TrimSpace(string(old)))
	return err
}
