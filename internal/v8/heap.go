package v8

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// HeapFormat is the format name ParseHeap records in the profile.
const HeapFormat = "heapprofile"

// Sample types of a V8 sampling heap profile, as ParseHeap writes them.
const (
	// HeapSamplesType counts the allocations V8 sampled (the samples
	// array): the count behind a value, for diff's noise model.
	HeapSamplesType = "samples"
	// HeapSpaceType is the bytes V8 estimates were allocated (selfSize:
	// each sampled allocation scaled up by its sampling probability), the
	// value DevTools shows and the default.
	HeapSpaceType = "space"
)

// heapNode is a node of a sampling heap profile's tree.
type heapNode struct {
	CallFrame struct {
		FunctionName string          `json:"functionName"`
		ScriptID     json.RawMessage `json:"scriptId"`
		URL          string          `json:"url"`
		LineNumber   *int64          `json:"lineNumber"`
		ColumnNumber *int64          `json:"columnNumber"`
	} `json:"callFrame"`
	SelfSize json.Number `json:"selfSize"`
	ID       int64       `json:"id"`
	Children []heapNode  `json:"children"`
}

type heapSample struct {
	Size   json.Number `json:"size"`
	NodeID int64       `json:"nodeId"`
}

type heapFile struct {
	Head    *heapNode    `json:"head"`
	Samples []heapSample `json:"samples"`
	Profile *heapFile    `json:"profile"` // the DevTools protocol's HeapProfiler.getSamplingProfile result
}

// ParseHeap reads a V8 sampling heap profile: a .heapprofile as `node
// --heap-prof` writes it and DevTools' "Allocation sampling" saves it, or
// the DevTools protocol's HeapProfiler.getSamplingProfile result (wrapped
// as {"profile": ...}). It has a tree of call frames from "head", each
// node with the bytes allocated there (selfSize) and its children, and a
// "samples" array naming the node of each sampled allocation.
//
// Each node with bytes becomes one sample with two values: samples/count,
// the allocations V8 sampled at the node (from the samples array), and
// space/bytes, the node's selfSize, the default type. Self and total bytes
// per function are then what DevTools' bottom-up view shows: a function's
// self size is the sum of its nodes' selfSize, its total size the bytes of
// every stack through it, counted once where it recurses. Functions are
// told apart by name, script, url, line and column as for CPU profiles.
// V8 samples an allocation about every 512 KiB (node
// --heap-prof-interval), and by default keeps only the allocations still
// live when the profile was taken; the file records neither, so the period
// is unknown (0).
func ParseHeap(r io.Reader, o pbuild.Options) (*profile.Profile, error) {
	var f heapFile
	d := json.NewDecoder(r)
	d.UseNumber()
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("heap profile: %w", err)
	}
	if f.Head == nil && f.Profile != nil {
		f = *f.Profile
	}
	if f.Head == nil {
		return nil, errors.New("heap profile: no head node")
	}
	b := pbuild.New(pbuild.Sampled)
	var nodes []Node
	var bytes []int64
	var total int64
	// Flatten the tree without recursion: node i's children are pushed
	// with their ids.
	stack := []*heapNode{f.Head}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		size, err := heapSize(n.SelfSize)
		if err != nil {
			return nil, fmt.Errorf("heap profile: node %d: selfSize: %w", n.ID, err)
		}
		if total += size; total > math.MaxInt64/4 {
			return nil, fmt.Errorf("heap profile: node %d: more than 2^61 bytes in all", n.ID)
		}
		nd := Node{ID: n.ID, CallFrame: CallFrame{
			FunctionName: n.CallFrame.FunctionName,
			ScriptID:     scriptID(n.CallFrame.ScriptID),
			URL:          n.CallFrame.URL,
			LineNumber:   orMinus1(n.CallFrame.LineNumber),
			ColumnNumber: orMinus1(n.CallFrame.ColumnNumber),
		}}
		for i := range n.Children {
			nd.Children = append(nd.Children, n.Children[i].ID)
			stack = append(stack, &n.Children[i])
		}
		nodes = append(nodes, nd)
		bytes = append(bytes, size)
	}
	at := make(map[int64]int, len(nodes))
	for i, n := range nodes {
		at[n.ID] = i
	}
	count := make([]int64, len(nodes))
	for i, s := range f.Samples {
		if _, err := heapSize(s.Size); err != nil {
			return nil, fmt.Errorf("heap profile: samples[%d]: size: %w", i, err)
		}
		j, ok := at[s.NodeID]
		if !ok {
			b.Warnf("samples name node ids that are not in the tree: dropped")
			continue
		}
		count[j]++
	}
	if len(f.Samples) == 0 {
		b.Warnf("no samples array: the number of sampled allocations is unknown, so diff cannot tell their noise")
	}
	t, err := newTree(b, &Profile{Nodes: nodes})
	if err != nil {
		return nil, fmt.Errorf("heap profile: %w", err)
	}
	labels := FileLabels(heapName(o.Name))
	for i := range nodes {
		if count[i] > 0 || bytes[i] > 0 {
			// The builder's second value holds bytes here (see below).
			b.Add(t.stackOf(int32(i)), count[i], bytes[i], labels)
		}
	}
	p := b.Profile()
	p.SampleType = []*profile.ValueType{{Type: HeapSamplesType, Unit: "count"}, {Type: HeapSpaceType, Unit: "bytes"}}
	p.PeriodType = &profile.ValueType{Type: HeapSpaceType, Unit: "bytes"}
	p.DefaultSampleType = HeapSpaceType
	return b.Finish(HeapFormat, 0, 0)
}

// heapSize reads a size: a whole number of bytes, not negative.
func heapSize(n json.Number) (int64, error) {
	if n == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(n), 64)
		if ferr != nil || f != math.Trunc(f) || f > math.MaxInt64/4 || f < math.MinInt64/4 {
			return 0, fmt.Errorf("%s is not a whole number of bytes", n)
		}
		v = int64(f)
	}
	if v < 0 {
		return 0, fmt.Errorf("negative (%d)", v)
	}
	if v > math.MaxInt64/4 {
		return 0, fmt.Errorf("%d bytes is more than 2^61", v)
	}
	return v, nil
}

func scriptID(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if uq, err := strconv.Unquote(s); err == nil {
		return uq
	}
	if s == "null" {
		return ""
	}
	return s
}

// heapName maps Node's heap profile file name,
// Heap.<date>.<time>.<pid>.<tid>.<seq>.heapprofile, to the CPU profile's
// form, so that FileLabels reads its pid and tid.
func heapName(name string) string {
	base := filepath.Base(name)
	if rest, ok := strings.CutPrefix(base, "Heap."); ok {
		if rest, ok := strings.CutSuffix(rest, ".heapprofile"); ok {
			return "CPU." + rest + ".cpuprofile"
		}
	}
	return ""
}
