package history

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
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

// git runs git in n.Dir with stdin and returns its stdout.
func (n Notes) git(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = n.Dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
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

// Put stores r as the note of r.Commit, replacing any. The note is the
// blob as written: git notes add -C takes it without cleaning it up.
func (n Notes) Put(ctx context.Context, r *Record) error {
	data, err := r.Marshal()
	if err != nil {
		return err
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
func (n Notes) Get(ctx context.Context, commit string) (*Record, error) {
	notes, err := n.list(ctx)
	if err != nil {
		return nil, err
	}
	blob, ok := notes[commit]
	if !ok {
		return nil, nil
	}
	data, err := n.cat(ctx, []string{blob})
	if err != nil {
		return nil, err
	}
	r, err := Unmarshal(data[0])
	if err != nil {
		return nil, fmt.Errorf("the note of %s under %s: %w", commit, n.ref(), err)
	}
	if r.Commit != commit {
		return nil, fmt.Errorf("the note of %s under %s holds the record of %s", commit, n.ref(), r.Commit)
	}
	return r, nil
}

// Load returns the records of the first-parent history of rev (the main
// branch's commits, not those of the branches merged into it), oldest
// first, and the hashes of that history, newest first. Commits without
// a record are skipped.
func (n Notes) Load(ctx context.Context, rev string) ([]*Record, []string, error) {
	out, err := n.git(ctx, nil, "rev-list", "--first-parent", "--end-of-options", rev+"^{commit}", "--")
	if err != nil {
		return nil, nil, fmt.Errorf("revision %q: %w", rev, err)
	}
	commits := strings.Fields(string(out))
	notes, err := n.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	var blobs, which []string
	for i := len(commits) - 1; i >= 0; i-- {
		if b, ok := notes[commits[i]]; ok {
			blobs = append(blobs, b)
			which = append(which, commits[i])
		}
	}
	data, err := n.cat(ctx, blobs)
	if err != nil {
		return nil, nil, err
	}
	recs := make([]*Record, len(data))
	for i, d := range data {
		r, err := Unmarshal(d)
		if err != nil {
			return nil, nil, fmt.Errorf("the note of %s under %s: %w", which[i], n.ref(), err)
		}
		if r.Commit != which[i] {
			return nil, nil, fmt.Errorf("the note of %s under %s holds the record of %s", which[i], n.ref(), r.Commit)
		}
		recs[i] = r
	}
	return recs, commits, nil
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

// cat reads blobs with one git cat-file --batch.
func (n Notes) cat(ctx context.Context, blobs []string) ([][]byte, error) {
	if len(blobs) == 0 {
		return nil, nil
	}
	out, err := n.git(ctx, []byte(strings.Join(blobs, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	rd := bufio.NewReader(bytes.NewReader(out))
	data := make([][]byte, len(blobs))
	for i := range blobs {
		header, err := rd.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			return nil, fmt.Errorf("git cat-file: %q for %s", strings.TrimSpace(header), blobs[i])
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("git cat-file: %q", strings.TrimSpace(header))
		}
		data[i] = make([]byte, size+1) // and the newline after it
		if _, err := io.ReadFull(rd, data[i]); err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		data[i] = data[i][:size]
	}
	return data, nil
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
	recs, _, err := n.Load(ctx, rev)
	if err != nil {
		return nil, err
	}
	var pruned []string
	for i := len(recs) - 1; i >= 0; i-- {
		r, newer := recs[i], len(recs)-1-i // newer: records after it
		changed := false
		switch {
		case rule.KeepFunctions >= 0 && newer >= rule.KeepFunctions:
			changed = r.Prune()
		case rule.KeepRuns > 0 && newer >= rule.KeepRuns:
			changed = r.PruneRuns()
		}
		if changed {
			if err := n.Put(ctx, r); err != nil {
				return pruned, err
			}
			pruned = append(pruned, r.Commit)
		}
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
